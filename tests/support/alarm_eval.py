"""A small evaluator of a synthesized CloudWatch alarm on metric math, for the tests of what the alarm decides.

It takes the alarm as synthesized (``AWS::CloudWatch::Alarm`` properties: its ``Metrics`` queries and expression,
period, ``EvaluationPeriods``, ``DatapointsToAlarm``, ``Threshold``, ``ComparisonOperator``, ``TreatMissingData``)
and datapoints as readers and writers print them, and answers the alarm's state minute by minute, as CloudWatch
documents it: each query's statistic per period over the datapoints whose namespace, name and dimension set match
exactly; the expression evaluated over the evaluation range only (``FILL(x, REPEAT)`` repeats the last value
within it, leading gaps stay missing); ``MIN``/``MAX`` of an array per timestamp over the series that have a value;
missing results treated as ``TreatMissingData`` says; ALARM when ``DatapointsToAlarm`` of the last
``EvaluationPeriods`` breach. Functions it does not know raise, so an expression it cannot read fails the test.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Series = list[float | None]
_TOKEN = re.compile(r"\s*(?:(?P<number>-?\d+(?:\.\d+)?)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>[-+>()\[\],]))")


@dataclass(frozen=True)
class Datapoint:
    minute: int
    namespace: str
    metric: str
    dimensions: Mapping[str, str]
    value: float


@dataclass
class Alarm:
    """One synthesized alarm on a metric math expression."""

    expression: str
    queries: dict[str, dict[str, Any]]  # id -> MetricStat
    evaluation_periods: int
    datapoints_to_alarm: int
    threshold: float
    comparison: str
    treat_missing: str
    period: int = 60
    trace: list[tuple[int, Series]] = field(default_factory=list)

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> Alarm:
        (returned,) = [query for query in properties["Metrics"] if query.get("ReturnData", True)]
        queries = {query["Id"]: query["MetricStat"] for query in properties["Metrics"] if "MetricStat" in query}
        periods = {stat["Period"] for stat in queries.values()}
        if len(periods) != 1:
            raise ValueError(f"an alarm's queries share one period, got {periods}")
        return cls(
            expression=returned["Expression"],
            queries=queries,
            evaluation_periods=int(properties["EvaluationPeriods"]),
            datapoints_to_alarm=int(properties.get("DatapointsToAlarm", properties["EvaluationPeriods"])),
            threshold=float(properties["Threshold"]),
            comparison=properties["ComparisonOperator"],
            treat_missing=properties.get("TreatMissingData", "missing"),
            period=int(periods.pop()),
        )

    def state(self, points: Iterable[Datapoint], minute: int) -> str:
        """ALARM or OK when evaluated at the end of ``minute`` (INSUFFICIENT_DATA only for ``missing``)."""
        window = range(minute - self.evaluation_periods + 1, minute + 1)
        values = self.evaluate(list(points), window)
        self.trace.append((minute, values))
        breaching = 0
        for value in values:
            if value is None:
                if self.treat_missing == "breaching":
                    breaching += 1
                elif self.treat_missing not in ("notBreaching", "ignore", "missing"):
                    raise ValueError(self.treat_missing)
            elif self._breaches(value):
                breaching += 1
        if breaching >= self.datapoints_to_alarm:
            return "ALARM"
        if self.treat_missing == "missing" and all(value is None for value in values):
            return "INSUFFICIENT_DATA"
        return "OK"

    def states(self, points: Iterable[Datapoint], minutes: Iterable[int]) -> list[str]:
        kept = list(points)
        return [self.state(kept, minute) for minute in minutes]

    def evaluate(self, points: Sequence[Datapoint], window: range) -> Series:
        series = {query_id: self._query(stat, points, window) for query_id, stat in self.queries.items()}
        result = _Parser(self.expression, series, len(window)).parse()
        if not isinstance(result, list):
            return [result] * len(window)
        return result

    def _breaches(self, value: float) -> bool:
        compare: dict[str, Callable[[float, float], bool]] = {
            "GreaterThanThreshold": lambda a, b: a > b,
            "GreaterThanOrEqualToThreshold": lambda a, b: a >= b,
            "LessThanThreshold": lambda a, b: a < b,
            "LessThanOrEqualToThreshold": lambda a, b: a <= b,
        }
        return compare[self.comparison](value, self.threshold)

    @staticmethod
    def _query(stat: Mapping[str, Any], points: Sequence[Datapoint], window: range) -> Series:
        metric = stat["Metric"]
        wanted = {dimension["Name"]: dimension["Value"] for dimension in metric.get("Dimensions", [])}
        reduce: dict[str, Callable[[list[float]], float]] = {
            "Minimum": min,
            "Maximum": max,
            "Sum": sum,
            "SampleCount": lambda values: float(len(values)),
            "Average": lambda values: sum(values) / len(values),
        }
        out: Series = []
        for minute in window:
            values = [
                point.value
                for point in points
                if point.minute == minute
                and point.namespace == metric["Namespace"]
                and point.metric == metric["MetricName"]
                and dict(point.dimensions) == wanted
            ]
            out.append(reduce[stat["Stat"]](values) if values else None)
        return out


Value = Series | float | None | list[Any]


class _Parser:
    """Recursive descent over the subset of metric math the alarms use: numbers, ids, ``-``, ``+``, ``>``,
    ``[a, b]``, ``FILL(x, REPEAT|n)``, ``MIN([...])``, ``MAX([...])``, ``IF(c, a, b)``."""

    def __init__(self, text: str, series: Mapping[str, Series], length: int) -> None:
        self._tokens = self._tokenize(text)
        self._at = 0
        self._series = series
        self._length = length

    @staticmethod
    def _tokenize(text: str) -> list[tuple[str, str]]:
        tokens, position = [], 0
        while position < len(text.rstrip()):
            match = _TOKEN.match(text, position)
            if match is None:
                raise ValueError(f"cannot read {text[position:]!r}")
            kind = match.lastgroup or ""
            tokens.append((kind, match.group(kind)))
            position = match.end()
        return tokens

    def parse(self) -> Value:
        value = self._comparison()
        if self._at != len(self._tokens):
            raise ValueError(f"unread tokens: {self._tokens[self._at :]}")
        return value

    def _peek(self) -> str | None:
        return self._tokens[self._at][1] if self._at < len(self._tokens) else None

    def _take(self, expected: str | None = None) -> tuple[str, str]:
        token = self._tokens[self._at]
        if expected is not None and token[1] != expected:
            raise ValueError(f"expected {expected!r}, got {token[1]!r}")
        self._at += 1
        return token

    def _comparison(self) -> Value:
        left = self._additive()
        if self._peek() == ">":
            self._take()
            right = self._additive()
            return self._pointwise(lambda a, b: 1.0 if a > b else 0.0, left, right)
        return left

    def _additive(self) -> Value:
        value = self._primary()
        while self._peek() in ("-", "+"):
            op = self._take()[1]
            right = self._primary()
            value = self._pointwise((lambda a, b: a - b) if op == "-" else (lambda a, b: a + b), value, right)
        return value

    def _primary(self) -> Value:
        kind, text = self._take()
        if kind == "number":
            return float(text)
        if text == "[":
            items = [self._comparison()]
            while self._peek() == ",":
                self._take()
                items.append(self._comparison())
            self._take("]")
            return items
        if text == "(":
            value = self._comparison()
            self._take(")")
            return value
        if kind == "name" and self._peek() == "(":
            self._take("(")
            if text == "FILL":
                target = self._comparison()
                self._take(",")
                how = self._take()
                self._take(")")
                return self._fill(target, how)
            args = [self._comparison()]
            while self._peek() == ",":
                self._take()
                args.append(self._comparison())
            self._take(")")
            return self._call(text, args)
        if kind == "name" and text in self._series:
            return list(self._series[text])
        raise ValueError(f"unknown name or function {text!r}")

    def _series_of(self, value: Value) -> Series:
        if isinstance(value, list):
            return value
        return [value] * self._length

    def _pointwise(self, op: Callable[[float, float], float], left: Value, right: Value) -> Series:
        return [
            None if a is None or b is None else op(a, b)
            for a, b in zip(self._series_of(left), self._series_of(right), strict=True)
        ]

    def _fill(self, target: Value, how: tuple[str, str]) -> Series:
        values = self._series_of(target)
        if how == ("name", "REPEAT"):
            out: Series = []
            last: float | None = None
            for value in values:
                last = value if value is not None else last
                out.append(last)
            return out
        if how[0] == "number":
            return [float(how[1]) if value is None else value for value in values]
        raise ValueError(f"FILL with {how[1]!r} is not modelled")

    def _call(self, name: str, args: list[Value]) -> Value:
        if name in ("MIN", "MAX"):
            (array,) = args
            if not isinstance(array, list) or not array or not isinstance(array[0], list):
                raise ValueError(f"{name} of one series (a scalar) is not modelled")
            pick = min if name == "MIN" else max
            out: Series = []
            for column in zip(*array, strict=True):
                present = [value for value in column if value is not None]
                out.append(pick(present) if present else None)
            return out
        if name == "IF":
            condition, yes, no = (self._series_of(arg) for arg in args)
            return [None if c is None else (y if c else n) for c, y, n in zip(condition, yes, no, strict=True)]
        raise ValueError(f"unknown function {name!r}")
