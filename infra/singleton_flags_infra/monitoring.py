"""Alarms and the dashboard: what an operator needs to see that the flags are served and changed as meant.

The functions emit EMF metrics in their stage's namespace ``SingletonFlags/<stage>`` with the dimension
``service`` (plus ``reason`` on Reads and ``code`` on Refusals); API Gateway, Lambda and SQS metrics are AWS's
own. Every alarm here watches this stage's metrics only.
"""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import (
    Aws,
    Duration,
    Fn,
    aws_apigateway as apigw,
    aws_cloudwatch as cw,
    aws_cloudwatch_actions as cw_actions,
    aws_iam as iam,
    aws_kms as kms,
    aws_lambda as lambda_,
    aws_sns as sns,
    aws_sns_subscriptions as subscriptions,
    aws_sqs as sqs,
)
from constructs import Construct

from singleton_flags_service import vocabulary

from . import constants
from .config import FlagsConfig
from .events import ChangeEvents
from .functions import title_of

ONE_MINUTE = Duration.minutes(1)
FIVE_MINUTES = Duration.minutes(5)
# Propagation: what the lag alarms grant beyond a reader's own bound (its cache age, plus max_stale while its
# refreshes fail), for the minute a record may wait for its reader's next read and CloudWatch's minute periods.
PROPAGATION_MARGIN_SECONDS = 60
PROPAGATION_PERIOD_SECONDS = 60


def flags_metric(stage: str, metric_name: str, period: Duration = ONE_MINUTE, **dimensions: str) -> cw.Metric:
    """A metric the functions of ``stage`` emit (EMF): always dimensioned by service, plus ``dimensions``."""
    return cw.Metric(
        namespace=constants.metrics_namespace(stage),
        metric_name=metric_name,
        dimensions_map={vocabulary.DIMENSION_SERVICE: vocabulary.DEFAULT_SERVICE, **dimensions},
        statistic=cw.Stats.SUM,
        period=period,
    )


def reads(stage: str, reason: str, period: Duration = ONE_MINUTE) -> cw.Metric:
    """Reads served with ``reason`` (STATIC, CACHED, STALE, DEFAULT)."""
    return flags_metric(stage, vocabulary.READS, period, **{vocabulary.DIMENSION_REASON: reason})


def served_version(stage: str, reason: str, statistic: str, period: Duration = ONE_MINUTE) -> cw.Metric:
    """The version readers served with ``reason``, every reader of the stage's namespace together (dimension
    ``reason`` only, whichever service reads): ``statistic`` Minimum is the oldest one served, Maximum the newest."""
    return cw.Metric(
        namespace=constants.metrics_namespace(stage),
        metric_name=vocabulary.SERVED_VERSION,
        dimensions_map={vocabulary.DIMENSION_REASON: reason},
        statistic=statistic,
        period=period,
    )


def committed_version(stage: str, statistic: str = cw.Stats.MAXIMUM, period: Duration = ONE_MINUTE) -> cw.Metric:
    """The versions the stage's functions committed (Maximum: the newest; SampleCount: how many)."""
    return flags_metric(stage, vocabulary.COMMITTED_VERSION, period).with_(statistic=statistic)


def lag_periods(bound_seconds: int) -> int:
    """Minute periods a reader may be seen behind, outside the periods holding a commit, before it is late: its
    bound plus the margin, in whole minutes, plus one (a record can show what was served before the last refresh)."""
    return -(-(bound_seconds + PROPAGATION_MARGIN_SECONDS) // PROPAGATION_PERIOD_SECONDS) + 1


def propagation_lag(stage: str, behind: tuple[str, ...]) -> cw.MathExpression:
    """Per minute: the newest version known (committed, repeated over the minutes without a commit, or served by
    any reader) minus the oldest one served by a reader reading with a reason in ``behind`` (DEFAULT serves
    ``NO_VERSION``: behind every version). 0 in a minute holding a commit (readers are not late yet), no datapoint
    without a reader in ``behind`` (an idle fleet raises nothing)."""
    period = Duration.seconds(PROPAGATION_PERIOD_SECONDS)
    oldest = {f"oldest{reason.lower()}": served_version(stage, reason, cw.Stats.MINIMUM, period) for reason in behind}
    newest = {
        f"newest{reason.lower()}": served_version(stage, reason, cw.Stats.MAXIMUM, period)
        for reason in (vocabulary.STATIC, vocabulary.CACHED)
    }
    expression = (
        f"IF(FILL(commits, 0) > 0, 0, MAX([FILL(committed, REPEAT), {', '.join(newest)}]) - MIN([{', '.join(oldest)}]))"
    )
    return cw.MathExpression(
        expression=expression,
        using_metrics={
            "committed": committed_version(stage, cw.Stats.MAXIMUM, period),
            "commits": committed_version(stage, cw.Stats.SAMPLE_COUNT, period),
            **newest,
            **oldest,
        },
        label="versions behind",
        period=period,
    )


class Monitoring(Construct):
    """Alarms (5xx, function errors and throttles, DLQ depth, DEFAULT and sustained STALE reads, change events
    refused, lagging or given up), an optional
    SNS topic as their action, and one dashboard."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        config: FlagsConfig,
        stage: apigw.Stage,
        functions: Mapping[str, lambda_.IFunction],
        dead_letter_queue: sqs.IQueue,
        failure_queue: sqs.IQueue,
        change_events: ChangeEvents,
        guard_queues: Mapping[str, sqs.IQueue] | None = None,
    ) -> None:
        """``guard_queues``: alarm id -> a guarded changes' last-stop queue (infra/guards.py), alarmed on depth."""
        super().__init__(scope, construct_id)
        self._config = config
        self._stage = stage
        self._functions = functions
        self._dead_letter_queue = dead_letter_queue
        self._failure_queue = failure_queue
        self._change_events = change_events
        self._guard_queues = dict(guard_queues or {})
        self.topic = self._build_topic() if config.alarm_email else None
        self.alarms: dict[str, cw.Alarm] = {}
        self._build_api_alarms()
        self._build_function_alarms()
        self._build_dead_letter_alarm()
        self._build_scheduled_change_alarm()
        self._build_approval_alarms()
        self._build_read_alarms()
        self._build_propagation_alarms()
        self._build_change_event_alarms()
        self._build_guard_alarms()
        self.dashboard = self._build_dashboard()

    # -------------------------------------------------------------------------------------------- alarms

    def _build_topic(self) -> sns.Topic:
        # CloudWatch cannot publish to a topic encrypted with the AWS-managed aws/sns key: a customer
        # managed key whose policy lets CloudWatch use it is required. A topic policy replaces SNS's default
        # one, so it must itself allow CloudWatch to publish. Both grants hold for this account's alarms in
        # this region only (aws:SourceAccount, aws:SourceArn: the confused-deputy guard).
        key = kms.Key(self, "AlarmTopicKey", description="singleton-flags alarm topic", enable_key_rotation=True)
        key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],  # in a key policy, "*" is this key
                conditions=self._alarms_of_this_account(),
            )
        )
        topic = sns.Topic(self, "AlarmTopic", display_name="singleton-flags alarms", master_key=key, enforce_ssl=True)
        topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CloudWatchAlarmsPublish",
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["sns:Publish"],
                resources=[topic.topic_arn],
                conditions=self._alarms_of_this_account(),
            )
        )
        topic.add_subscription(subscriptions.EmailSubscription(self._config.alarm_email))
        return topic

    @staticmethod
    def _alarms_of_this_account() -> dict[str, dict[str, str]]:
        return {
            "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
            "ArnLike": {"aws:SourceArn": f"arn:{Aws.PARTITION}:cloudwatch:{Aws.REGION}:{Aws.ACCOUNT_ID}:alarm:*"},
        }

    def _alarm(
        self,
        construct_id: str,
        metric: cw.IMetric,
        description: str,
        *,
        evaluation_periods: int = 1,
        datapoints_to_alarm: int = 1,
        threshold: float = 0,
    ) -> cw.Alarm:
        """Alarm when the metric is above ``threshold`` in ``datapoints_to_alarm`` of ``evaluation_periods``."""
        alarm = cw.Alarm(
            self,
            construct_id,
            metric=metric,
            threshold=threshold,
            comparison_operator=cw.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=evaluation_periods,
            datapoints_to_alarm=datapoints_to_alarm,
            treat_missing_data=cw.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        if self.topic is not None:
            alarm.add_alarm_action(cw_actions.SnsAction(self.topic))
        self.alarms[construct_id] = alarm
        return alarm

    def _build_api_alarms(self) -> None:
        self._alarm(
            "Api5xx",
            self._stage.metric_server_error(period=FIVE_MINUTES, statistic=cw.Stats.SUM),
            "The flags API answered 5xx: a function failed or timed out (input never causes a 5xx).",
        )

    def _build_function_alarms(self) -> None:
        watched = {**self._functions, constants.CHANGE_EVENTS_FUNCTION: self._change_events.function}
        for name, function in watched.items():
            title = title_of(name)
            self._alarm(
                f"{title}Errors",
                function.metric_errors(period=FIVE_MINUTES, statistic=cw.Stats.SUM),
                f"The {name} function raised (unhandled error or timeout).",
            )
            self._alarm(
                f"{title}Throttles",
                function.metric_throttles(period=FIVE_MINUTES, statistic=cw.Stats.SUM),
                f"The {name} function was throttled (account or reserved concurrency exhausted).",
            )

    def _build_dead_letter_alarm(self) -> None:
        self._alarm(
            "MaintenanceDeadLetters",
            self._dead_letter_queue.metric_approximate_number_of_messages_visible(
                period=FIVE_MINUTES, statistic=cw.Stats.MAXIMUM
            ),
            "A maintenance window start or end could not be delivered: see the dead-letter queue. A missed end "
            "still expires at the window's stored deadline.",
        )
        self._alarm(
            "MaintenanceFailures",
            self._failure_queue.metric_approximate_number_of_messages_visible(
                period=FIVE_MINUTES, statistic=cw.Stats.MAXIMUM
            ),
            "The maintenance function failed a window start or end through all of Lambda's retries (DynamoDB "
            "unavailable, throttled, contention): see the on-failure queue and the function's ERROR logs.",
        )
        self._alarm(
            "WindowFailures",
            flags_metric(self._config.stage, vocabulary.WINDOW_FAILURES, FIVE_MINUTES),
            "A maintenance window delivery was refused and will not be retried: rejected payload, late (a start "
            "more than half its window after its scheduled time, or an end of an earlier occurrence), or a change "
            "the store refused (item too large). See the maintenance function's ERROR logs.",
        )

    def _build_guard_alarms(self) -> None:
        for construct_id, queue in self._guard_queues.items():
            self._alarm(
                construct_id,
                queue.metric_approximate_number_of_messages_visible(period=FIVE_MINUTES, statistic=cw.Stats.MAXIMUM),
                "A guarded change's alarm event or bake end was not handled through every retry (undelivered, or "
                "the guard function kept failing): see the queue and the guard function's ERROR logs. A guard whose "
                "bake end was lost is served as closed from its bake end on.",
            )
        self._alarm(
            "GuardSkips",
            flags_metric(self._config.stage, vocabulary.GUARD_SKIPS, FIVE_MINUTES),
            "A guard's alarm fired after a newer change of the flags: nothing was reverted. Check whether the newer "
            "change needs the same fix (GET /flags/guards shows the guard's outcome).",
        )
        self._alarm(
            "GuardFailures",
            flags_metric(self._config.stage, vocabulary.GUARD_FAILURES, FIVE_MINUTES),
            "A guard could not do its part and no retry will help: a revert the store refused, a rejected event, "
            "an early close, or a close schedule not created. See the guard and write functions' ERROR logs.",
        )

    def _build_scheduled_change_alarm(self) -> None:
        self._alarm(
            "ScheduledChangeFailures",
            flags_metric(self._config.stage, vocabulary.SCHEDULED_CHANGE_FAILURES, FIVE_MINUTES),
            "A scheduled change was not applied and will not be retried: no longer valid when due (a flag no "
            "longer declared, a value out of its rules, the item too large), an unknown id, or a payload that "
            "is not a scheduled change's. GET /flags/schedules shows why; see the maintenance function's ERROR logs.",
        )
        self._alarm(
            "ScheduledWorkOverdue",
            flags_metric(self._config.stage, vocabulary.SCHEDULES_OVERDUE, FIVE_MINUTES),
            "A scheduled change or a guard's close is still pending past its time: its one-time schedule never "
            "delivered (its schedule group replaced or deleted under it). The reconcile function's ERROR log names "
            "it; cancel it (DELETE /flags/schedules/{id}) or apply it by hand (docs/operations.md).",
        )

    def _build_approval_alarms(self) -> None:
        self._alarm(
            "BreakGlassUsed",
            flags_metric(self._config.stage, vocabulary.BREAK_GLASS_USED, FIVE_MINUTES),
            "A protected flag was changed by break-glass, without approvals: GET /flags/history shows who and why "
            "(kind break_glass). Expected only during an incident.",
        )
        self._alarm(
            "UnauditedFlagsWrite",
            flags_metric(self._config.stage, vocabulary.UNAUDITED_WRITES, FIVE_MINUTES),
            "The flags item was written without an audit record for its version (someone with table rights calling "
            "UpdateItem or PutItem directly, around the API and its approvals): the change-events function's ERROR "
            "log 'unaudited write to the flags item' names the version and what differs from the record. Find the "
            "writer in CloudTrail; restore the audited state with a revert, or a change request when a protected flag "
            "moved (docs/change-workflows.md).",
        )

    def _build_read_alarms(self) -> None:
        self._alarm(
            "DefaultReads",
            reads(self._config.stage, "DEFAULT"),
            "Readers were served the declared fallbacks (DEFAULT): the settings item is missing or DynamoDB has "
            "been unreachable for longer than max_stale. A missing item: `flagctl restore` brings it back from "
            "the audit trail (docs/operations.md).",
        )
        self._alarm(
            "StaleReadsSustained",
            reads(self._config.stage, "STALE"),
            f"Readers were served STALE values in {constants.STALE_ALARM_DATAPOINTS} of the last "
            f"{constants.STALE_ALARM_PERIODS} minutes: cache refreshes keep failing.",
            evaluation_periods=constants.STALE_ALARM_PERIODS,
            datapoints_to_alarm=constants.STALE_ALARM_DATAPOINTS,
        )

    def _build_propagation_alarms(self) -> None:
        """A committed version not served by the active readers within their bound plus the margin (docs/
        consistency.md): readers serving from their cache or the table, or the fallbacks, within the cache age; readers
        whose refreshes fail (STALE) within the cache age plus max_stale. No reader, no datapoint, no alarm."""
        max_age, max_stale = self._config.cache_max_age_seconds, self._config.max_stale_seconds
        for construct_id, behind, bound, words in (
            (
                "PropagationLag",
                (vocabulary.STATIC, vocabulary.CACHED, vocabulary.DEFAULT),
                max_age,
                f"the cache age ({max_age} s)",
            ),
            (
                "PropagationLagWhileStale",
                (vocabulary.STALE,),
                max_age + max_stale,
                f"the cache age plus max_stale ({max_age + max_stale} s) while their refreshes fail",
            ),
        ):
            periods = lag_periods(bound)
            self._alarm(
                construct_id,
                propagation_lag(self._config.stage, behind),
                f"Readers still served an older version than the newest committed one in {periods} minutes after "
                f"it, beyond {words} plus {PROPAGATION_MARGIN_SECONDS} s: a change has not reached every active "
                f"reader ({'/'.join(behind)}). Readers in other accounts or regions are not seen (docs/"
                "consistency.md).",
                evaluation_periods=periods + 1,
                datapoints_to_alarm=periods,
            )

    def _build_change_event_alarms(self) -> None:
        self._alarm(
            "ChangeEventsRefused",
            flags_metric(self._config.stage, vocabulary.CHANGE_EVENTS_REFUSED, FIVE_MINUTES),
            "EventBridge refused Flags Changed entries (PutEvents FailedEntryCount, or the call failed): they are "
            "retried, then the batch is retried from the first unpublished record. See the change-events "
            "function's ERROR logs for the error codes.",
        )
        self._alarm(
            "ChangeEventsLagging",
            self._change_events.function.metric("IteratorAge", period=FIVE_MINUTES, statistic=cw.Stats.MAXIMUM),
            f"The change-events function is more than {constants.STREAM_LAG_ALARM_SECONDS // 60} minutes behind the "
            "table's stream: consumers hear of changes late (EventBridge refusing entries, or the function failing).",
            threshold=constants.STREAM_LAG_ALARM_SECONDS * 1000,  # IteratorAge is in milliseconds
        )
        self._alarm(
            "ChangeEventsUndelivered",
            self._change_events.failure_queue.metric_approximate_number_of_messages_visible(
                period=FIVE_MINUTES, statistic=cw.Stats.MAXIMUM
            ),
            "Flags Changed events were given up after the stream mapping's retries: the on-failure queue holds the "
            "shard and sequence numbers; the versions themselves are in GET /flags/history (docs/change-workflows.md).",
        )
        forward_dead_letters = self._change_events.forward_dead_letter_queue
        if forward_dead_letters is not None:
            self._alarm(
                "TopicForwardingDeadLetters",
                forward_dead_letters.metric_approximate_number_of_messages_visible(
                    period=FIVE_MINUTES, statistic=cw.Stats.MAXIMUM
                ),
                "Flags Changed events could not be published to the change events topic through a day of retries "
                "(topic or key policy, throttling): the dead-letter queue holds them, with the error.",
            )

    # -------------------------------------------------------------------------------------------- dashboard

    def _graph(self, title: str, metrics: list[cw.IMetric], width: int = 8) -> cw.GraphWidget:
        return cw.GraphWidget(title=title, left=metrics, width=width, height=6)

    def _build_dashboard(self) -> cw.Dashboard:
        refusals = cw.MathExpression(
            expression=(
                f"SEARCH('{{{constants.metrics_namespace(self._config.stage)},{vocabulary.DIMENSION_SERVICE},"
                f"{vocabulary.DIMENSION_CODE}}} "
                f"MetricName=\"{vocabulary.REFUSALS}\"', 'Sum', 300)"
            ),
            label="Refusals by code",
            period=FIVE_MINUTES,
        )
        dashboard = cw.Dashboard(
            self,
            "Dashboard",
            dashboard_name=Fn.join("-", [constants.stack_name(self._config.stage), Aws.REGION]),
        )
        dashboard.add_widgets(
            self._graph(
                "Reads by reason",
                [
                    reads(self._config.stage, reason, FIVE_MINUTES).with_(label=reason)
                    for reason in vocabulary.READ_REASONS
                ],
            ),
            self._graph(
                "Cache refreshes",
                self._counts(vocabulary.CACHE_REFRESHES, vocabulary.CACHE_REFRESH_FAILURES),
            ),
            self._graph(
                "Changes and conflicts",
                self._counts(vocabulary.CHANGES_APPLIED, vocabulary.WRITE_CONFLICTS, vocabulary.WRITE_RETRIES),
            ),
        )
        dashboard.add_widgets(
            self._graph(
                "Committed vs served versions",
                [
                    committed_version(self._config.stage).with_(label="committed (newest)"),
                    *(
                        served_version(self._config.stage, reason, cw.Stats.MINIMUM).with_(
                            label=f"served {reason} (oldest)"
                        )
                        for reason in vocabulary.READ_REASONS
                    ),
                ],
                width=12,
            ),
            self._graph(
                "Versions behind",
                [
                    propagation_lag(self._config.stage, (vocabulary.STATIC, vocabulary.CACHED, vocabulary.DEFAULT)),
                    propagation_lag(self._config.stage, (vocabulary.STALE,)).with_(label="versions behind (STALE)"),
                ],
                width=12,
            ),
        )
        dashboard.add_widgets(
            self._graph("Refusals by error code", [refusals]),
            self._graph(
                "Maintenance windows",
                [
                    *self._counts(
                        vocabulary.WINDOW_STARTS,
                        vocabulary.WINDOW_ENDS,
                        vocabulary.WINDOW_SKIPS,
                        vocabulary.WINDOW_FAILURES,
                    ),
                    self._dead_letter_queue.metric_approximate_number_of_messages_visible(
                        period=FIVE_MINUTES, statistic=cw.Stats.MAXIMUM, label="Undelivered (DLQ)"
                    ),
                    self._failure_queue.metric_approximate_number_of_messages_visible(
                        period=FIVE_MINUTES, statistic=cw.Stats.MAXIMUM, label="Failed (on-failure queue)"
                    ),
                ],
            ),
            self._graph(
                "Change events",
                [
                    *self._counts(vocabulary.CHANGE_EVENTS_PUBLISHED, vocabulary.CHANGE_EVENTS_REFUSED),
                    self._change_events.failure_queue.metric_approximate_number_of_messages_visible(
                        period=FIVE_MINUTES, statistic=cw.Stats.MAXIMUM, label="Given up (on-failure queue)"
                    ),
                ],
            ),
            self._graph(
                "Scheduled changes",
                self._counts(
                    vocabulary.SCHEDULED_CHANGES_APPLIED,
                    vocabulary.SCHEDULED_CHANGE_SKIPS,
                    vocabulary.SCHEDULED_CHANGE_FAILURES,
                    vocabulary.SCHEDULES_RECREATED,
                    vocabulary.SCHEDULES_OVERDUE,
                ),
            ),
            self._graph(
                "Guarded changes",
                self._counts(
                    vocabulary.GUARD_REVERTS,
                    vocabulary.GUARD_SKIPS,
                    vocabulary.GUARD_CLOSES,
                    vocabulary.GUARD_FAILURES,
                ),
            ),
            self._graph(
                "API latency",
                [
                    self._stage.metric_latency(period=FIVE_MINUTES, statistic=cw.Stats.p(50), label="p50"),
                    self._stage.metric_latency(period=FIVE_MINUTES, statistic=cw.Stats.p(99), label="p99"),
                ],
            ),
        )
        dashboard.add_widgets(
            self._graph(
                "API errors",
                [
                    self._stage.metric_client_error(period=FIVE_MINUTES, statistic=cw.Stats.SUM, label="4xx"),
                    self._stage.metric_server_error(period=FIVE_MINUTES, statistic=cw.Stats.SUM, label="5xx"),
                ],
                width=12,
            ),
            cw.AlarmStatusWidget(title="Alarms", alarms=list(self.alarms.values()), width=12, height=6),
        )
        return dashboard

    def _counts(self, *metric_names: str) -> list[cw.IMetric]:
        return [flags_metric(self._config.stage, name, FIVE_MINUTES).with_(label=name) for name in metric_names]
