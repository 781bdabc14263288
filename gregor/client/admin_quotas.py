"""The AdminClient's client quota calls (mixed into AdminClient), Kafka's Admin
describeClientQuotas / alterClientQuotas over DescribeClientQuotas and AlterClientQuotas.

An entity is a dict of Kafka's entity types to names, None naming the default entity:

    admin.alter_client_quotas([({"user": "alice"}, {"producer_byte_rate": 1048576}),
                               ({"client-id": None}, {"consumer_byte_rate": 2 << 20})])
    admin.alter_client_quotas([({"user": "alice"}, {"producer_byte_rate": None})])  # remove
    admin.describe_client_quotas({"user": "alice"})      # [ClientQuotaEntry]
    admin.describe_client_quotas({"user": ANY_NAME}, strict=True)  # every user entity
    admin.describe_client_quotas()                       # everything
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from ..protocol.errors import error_for_code


class _AnyName:
    def __repr__(self):
        return "ANY_NAME"


ANY_NAME = _AnyName()        # a filter value matching any name of that entity type
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2


@dataclass
class ClientQuotaEntry:
    entity: dict[str, str | None]       # {"user": "alice", "client-id": None}
    values: dict[str, float]            # {"producer_byte_rate": 1048576.0}


def _components(flt: Mapping) -> list[dict]:
    out = []
    for kind, match in flt.items():
        if match is ANY_NAME:
            out.append({"entity_type": kind, "match_type": MATCH_SPECIFIED, "match": None})
        elif match is None:
            out.append({"entity_type": kind, "match_type": MATCH_DEFAULT, "match": None})
        else:
            out.append({"entity_type": kind, "match_type": MATCH_EXACT, "match": str(match)})
    return out


def _describe_entity(entity: Mapping) -> str:
    return ", ".join(f"{k} {'<default>' if v is None else repr(v)}" for k, v in entity.items())


class QuotaAdminMethods:
    def describe_client_quotas(self, flt: Mapping | None = None, *, strict: bool = False,
                               timeout: float | None = None) -> list[ClientQuotaEntry]:
        """The quota entities matching a filter {entity type: name | None | ANY_NAME}; with
        strict=True only entities with no other entity types."""
        timeout = self._timeout(timeout)
        body = {"components": _components(flt or {}), "strict": strict}
        resp = self._net.request(None, "DescribeClientQuotas", body, None, timeout)
        if resp["error_code"]:
            raise error_for_code(resp["error_code"], "describing client quotas failed: "
                                 f"{resp.get('error_message') or ''}".rstrip(": "))
        return [ClientQuotaEntry({e["entity_type"]: e["entity_name"] for e in entry["entity"]},
                                 {v["key"]: v["value"] for v in entry["values"]})
                for entry in resp["entries"] or []]

    def alter_client_quotas(self, alterations: Iterable[tuple[Mapping, Mapping]], *,
                            validate_only: bool = False, timeout: float | None = None) -> None:
        """Set ({key: value}) or remove ({key: None}) quotas of entities. Every alteration is
        tried; the first failure is raised (naming its entity) afterwards."""
        timeout = self._timeout(timeout)
        alterations = list(alterations)
        entries = [{"entity": [{"entity_type": k, "entity_name": v} for k, v in entity.items()],
                    "ops": [{"key": key, "value": 0.0 if value is None else float(value),
                             "remove": value is None} for key, value in ops.items()]}
                   for entity, ops in alterations]
        resp = self._net.request(None, "AlterClientQuotas",
                                 {"entries": entries, "validate_only": validate_only}, None,
                                 timeout)
        for (entity, _), result in zip(alterations, resp["entries"]):
            if result["error_code"]:
                raise error_for_code(result["error_code"],
                                     f"altering the quotas of {_describe_entity(entity)} "
                                     f"failed: {result.get('error_message') or ''}")
