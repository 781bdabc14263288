"""`gregor schemas`: the Schema Registry from the command line (Confluent's REST API).

    gregor schemas list
    gregor schemas get orders-value [--version 2] | gregor schemas get --id 7
    gregor schemas register orders-value order.avsc [--type AVRO] [--normalize]
    gregor schemas test orders-value order-v2.avsc [--version latest]
    gregor schemas delete orders-value [--version 1] [--permanent]
    gregor schemas config [orders-value] [--set FULL]

Works against any registry with Confluent's API (gregor's or Confluent's); --url or
$GREGOR_SCHEMA_REGISTRY_URL, --user USER:PASSWORD for basic auth.
"""
from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
from urllib.parse import quote

import click

V1 = "application/vnd.schemaregistry.v1+json"


class _Api:
    def __init__(self, url: str, user: str | None, ca_file: str | None):
        self.url = url.rstrip("/")
        self.headers = {"Accept": V1, "Content-Type": V1}
        if user:
            self.headers["Authorization"] = "Basic " + base64.b64encode(user.encode()).decode()
        self.context = ssl.create_default_context(cafile=ca_file) if ca_file else None

    def __call__(self, method: str, path: str, body=None):
        req = urllib.request.Request(self.url + path, method=method, headers=self.headers,
                                     data=json.dumps(body).encode() if body is not None
                                     else None)
        try:
            with urllib.request.urlopen(req, timeout=60, context=self.context) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                err = json.loads(e.read())
                msg = f"{err.get('message')} (error {err.get('error_code')})"
            except ValueError:
                msg = f"HTTP {e.code}"
            raise click.ClickException(msg) from None
        except urllib.error.URLError as e:
            raise click.ClickException(f"cannot reach the registry at {self.url}: "
                                       f"{e.reason}") from None


def _subject(s: str) -> str:
    return quote(s, safe="")


def _echo(value) -> None:
    click.echo(json.dumps(value, indent=2) if not isinstance(value, str) else value)


def _schema_body(path: str, schema_type: str) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise click.ClickException(f"cannot read {path}: {e.strerror}") from None
    return {"schema": text, "schemaType": schema_type.upper()}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", default="http://127.0.0.1:8081", show_default=True,
              envvar="GREGOR_SCHEMA_REGISTRY_URL", help="The registry (also "
                                                        "$GREGOR_SCHEMA_REGISTRY_URL).")
@click.option("--user", default=None, envvar="GREGOR_SCHEMA_REGISTRY_USER",
              metavar="USER:PASSWORD", help="HTTP basic auth.")
@click.option("--ca-file", default=None, type=click.Path(dir_okay=False),
              help="CA certificates to check an https registry with.")
@click.pass_context
def command(ctx, url, user, ca_file):
    """List, read, register, test and delete schemas; read and set compatibility."""
    ctx.obj = _Api(url, user, ca_file)


@command.command("list")
@click.option("--deleted", is_flag=True, help="Include soft-deleted subjects.")
@click.option("--prefix", default=None, help="Only subjects starting with this.")
@click.pass_obj
def list_(api, deleted, prefix):
    """Subjects, one a line."""
    query = f"?deleted={'true' if deleted else 'false'}"
    if prefix:
        query += f"&subjectPrefix={quote(prefix, safe='')}"
    for s in api("GET", "/subjects" + query):
        click.echo(s)


@command.command()
@click.argument("subject", required=False)
@click.option("--version", default="latest", show_default=True)
@click.option("--id", "schema_id", type=int, default=None, help="A schema by its id.")
@click.option("--versions", is_flag=True, help="List the subject's versions instead.")
@click.pass_obj
def get(api, subject, version, schema_id, versions):
    """A subject's version (schema, id, version), or a schema by --id."""
    if schema_id is not None:
        _echo(api("GET", f"/schemas/ids/{schema_id}"))
    elif subject is None:
        raise click.UsageError("give a SUBJECT or --id")
    elif versions:
        _echo(api("GET", f"/subjects/{_subject(subject)}/versions"))
    else:
        _echo(api("GET", f"/subjects/{_subject(subject)}/versions/{quote(version)}"))


@command.command()
@click.argument("subject")
@click.argument("schema_file", type=click.Path(dir_okay=False))
@click.option("--type", "schema_type", default="AVRO", show_default=True,
              type=click.Choice(["AVRO", "JSON", "PROTOBUF"], case_sensitive=False))
@click.option("--normalize", is_flag=True)
@click.pass_obj
def register(api, subject, schema_file, schema_type, normalize):
    """Register SCHEMA_FILE under SUBJECT; prints its id."""
    body = _schema_body(schema_file, schema_type)
    out = api("POST", f"/subjects/{_subject(subject)}/versions?normalize="
                      f"{'true' if normalize else 'false'}", body)
    click.echo(out["id"])


@command.command()
@click.argument("subject")
@click.argument("schema_file", type=click.Path(dir_okay=False))
@click.option("--type", "schema_type", default="AVRO", show_default=True,
              type=click.Choice(["AVRO", "JSON", "PROTOBUF"], case_sensitive=False))
@click.option("--version", default=None, help="Test against one version (default: as the "
                                              "subject's level says).")
@click.pass_obj
def test(api, subject, schema_file, schema_type, version):
    """Would SCHEMA_FILE be accepted under SUBJECT? Exit 1 if not, with the reasons."""
    path = f"/compatibility/subjects/{_subject(subject)}/versions"
    if version:
        path += f"/{quote(version)}"
    out = api("POST", path + "?verbose=true", _schema_body(schema_file, schema_type))
    if out["is_compatible"]:
        click.echo("compatible")
        return
    click.echo("incompatible:")
    for m in out.get("messages", []):
        click.echo(f"  {m}")
    raise SystemExit(1)


@command.command()
@click.argument("subject")
@click.option("--version", default=None, help="One version (default: the whole subject).")
@click.option("--permanent", is_flag=True, help="Hard delete (after a soft one).")
@click.pass_obj
def delete(api, subject, version, permanent):
    """Soft-delete (or --permanent) a subject or one version; prints what was deleted."""
    path = f"/subjects/{_subject(subject)}"
    if version:
        path += f"/versions/{quote(version)}"
    _echo(api("DELETE", path + f"?permanent={'true' if permanent else 'false'}"))


@command.command()
@click.argument("subject", required=False)
@click.option("--set", "level", default=None,
              type=click.Choice(["NONE", "BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD",
                                 "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE"],
                                case_sensitive=False))
@click.pass_obj
def config(api, subject, level):
    """Show (or --set) the compatibility level, global or of SUBJECT."""
    path = "/config" + (f"/{_subject(subject)}" if subject else "")
    if level:
        _echo(api("PUT", path, {"compatibility": level.upper()})["compatibility"])
    else:
        _echo(api("GET", path + ("?defaultToGlobal=true" if subject else ""))
              ["compatibilityLevel"])
