"""The checker's verdict: anomaly name -> concrete examples, a valid flag, counts, figures."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

# Kafka permits these (see docs/jepsen.md): other producers' records between one op's sends,
# and transactions interleaving their writes across partitions.
DEFAULT_ALLOWED = frozenset({"int-send-skip", "G0"})


@dataclass
class Report:
    anomalies: dict[str, list[dict]]
    allowed: frozenset = DEFAULT_ALLOWED
    counts: dict = field(default_factory=dict)          # f -> type -> number of ops
    availability: dict = field(default_factory=dict)

    @property
    def errors(self) -> dict[str, list[dict]]:
        """The anomalies found that are not allowed."""
        return {n: ex for n, ex in self.anomalies.items() if ex and n not in self.allowed}

    @property
    def valid(self) -> bool:
        return not self.errors

    def found(self) -> dict[str, int]:
        return {n: len(ex) for n, ex in self.anomalies.items() if ex}

    def summary(self, examples: int = 2) -> str:
        lines = [f"valid: {self.valid}"]
        ops = ", ".join(f"{f} " + "/".join(f"{n} {t}" for t, n in sorted(by.items()))
                        for f, by in sorted(self.counts.items()))
        lines.append(f"ops: {ops or 'none'}")
        if self.availability:
            av = self.availability
            line = (f"availability: acked {av.get('acknowledged_fraction')} "
                    f"(healthy {av.get('healthy_acknowledged_fraction')}), longest outage "
                    f"{av.get('longest_outage_s')} s")
            if "recovery_s" in av:
                line += f", recovery after heal {av['recovery_s']} s"
            lines.append(line)
        for name, ex in self.anomalies.items():
            if not ex:
                continue
            tag = " (allowed)" if name in self.allowed else ""
            shown = "; ".join(json.dumps(e, default=repr)[:200] for e in ex[:examples])
            lines.append(f"{name}{tag}: {len(ex)}: {shown}")
        return "\n".join(lines)

    __str__ = summary

    def to_json(self) -> dict:
        return {"valid": self.valid, "errors": sorted(self.errors), "found": self.found(),
                "allowed": sorted(self.allowed), "counts": self.counts,
                "availability": self.availability, "anomalies": self.anomalies}
