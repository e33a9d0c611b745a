"""`schedule_daily`: per schedule and business day of the planned instant (its date in the
service's zone), what its cycles did."""

from __future__ import annotations

from cronledger.persistence.store import as_instant
from domain.approvals import ApprovalInstance
from domain.runs import DEAD_LETTER, Run
from projections.business import BusinessTime
from projections.engine import EventClass, Handler, Projection, Sql, Stamped

DECISIONS = (ApprovalInstance.Approved, ApprovalInstance.Withdrawn, ApprovalInstance.Expired)


class ScheduleDailyProjection(Projection):
    """Cycles, successes, runs now dead-lettered, mean registration lag, mean time to decision.

    A run counts on the business day of its planned instant, whenever its attempts happen; its
    instance's decision counts there too. `schedule_daily_keys` remembers, for each run and
    each launched instance, the row it counts in.
    """

    name = "schedule_daily"
    tables = ("schedule_daily", "schedule_daily_keys")
    business: BusinessTime

    def __init__(self, zone: str) -> None:
        self.business = BusinessTime(zone)

    def ddl(self, sql: Sql) -> list[str]:
        seconds = sql.seconds_type
        return [
            "CREATE TABLE IF NOT EXISTS schedule_daily ("
            "schedule_id TEXT NOT NULL, day TEXT NOT NULL, tenant_id TEXT NOT NULL, "
            "cycles INTEGER NOT NULL, successes INTEGER NOT NULL, dead_letters INTEGER NOT NULL, "
            f"registration_lag_total_seconds {seconds} NOT NULL, "
            f"mean_registration_lag_seconds {seconds} NOT NULL, "
            f"decisions INTEGER NOT NULL, decision_total_seconds {seconds} NOT NULL, "
            f"mean_decision_seconds {seconds}, iso_week INTEGER NOT NULL, "
            "iso_year INTEGER NOT NULL, PRIMARY KEY (schedule_id, day))",
            "CREATE INDEX IF NOT EXISTS schedule_daily_by_tenant "
            "ON schedule_daily (tenant_id, day)",
            "CREATE TABLE IF NOT EXISTS schedule_daily_keys ("
            "key TEXT PRIMARY KEY, schedule_id TEXT NOT NULL, day TEXT NOT NULL, "
            f"started_at {sql.timestamp_type}, dead INTEGER NOT NULL DEFAULT 0)",
        ]

    def passes(self) -> list[dict[EventClass, Handler]]:
        """Each new run's and launched instance's key first, for the whole batch (a run's
        before its instance's); then every event counted in order."""
        return [
            {Run.Registered: self.keyed, ApprovalInstance.Submitted: self.submitted},
            self.handlers(),
        ]

    def handlers(self) -> dict[EventClass, Handler]:
        """What each event counts (`passes` keys the runs and instances first)."""
        return {
            Run.Registered: self.registered,
            Run.AttemptSucceeded: self.counted("successes"),
            Run.AttemptFailed: self.dead_lettered,
            Run.Retried: self.retried,
            Run.AttemptInterrupted: self.dead_lettered,
            **dict.fromkeys(DECISIONS, self.decided),
        }

    def keyed(self, sql: Sql, event: Run.Registered, position: int) -> None:
        sql.write(
            "INSERT INTO schedule_daily_keys (key, schedule_id, day) VALUES (?, ?, ?)",
            (str(event.originator_id), str(event.schedule_id), self.day(event)),
        )

    def registered(self, sql: Sql, event: Run.Registered, position: int) -> None:
        day, _, week, year = self.business.of(event.planned_at)
        schedule_id = str(event.schedule_id)
        lag = sql.seconds(event.at - event.planned_at)
        sql.write(
            "INSERT INTO schedule_daily (schedule_id, day, tenant_id, cycles, successes, "
            "dead_letters, registration_lag_total_seconds, mean_registration_lag_seconds, "
            "decisions, decision_total_seconds, iso_week, iso_year) "
            "VALUES (?, ?, ?, 1, 0, 0, ?, ?, 0, 0, ?, ?) "
            "ON CONFLICT (schedule_id, day) DO UPDATE SET cycles = schedule_daily.cycles + 1, "
            "registration_lag_total_seconds = schedule_daily.registration_lag_total_seconds "
            "+ excluded.registration_lag_total_seconds, mean_registration_lag_seconds = "
            "(schedule_daily.registration_lag_total_seconds "
            "+ excluded.registration_lag_total_seconds) / (schedule_daily.cycles + 1)",
            (schedule_id, day, str(event.tenant_id), lag, lag, week, year),
        )

    def day(self, registered: Run.Registered) -> str:
        """The business day a run counts on: its planned instant's."""
        return self.business.of(registered.planned_at)[0]

    @staticmethod
    def counted(column: str) -> Handler:
        def handler(sql: Sql, event: Stamped, position: int) -> None:
            _add_one(sql, column, str(event.originator_id))

        return handler

    @staticmethod
    def dead_lettered(
        sql: Sql, event: Run.AttemptFailed | Run.AttemptInterrupted, position: int
    ) -> None:
        """A run counts once while it lies in the dead letter."""
        if event.status == DEAD_LETTER:
            _mark_dead(sql, str(event.originator_id), dead=True)

    @staticmethod
    def retried(sql: Sql, event: Run.Retried, position: int) -> None:
        """A manual retry takes a dead-lettered run out of the count (if it was in it)."""
        _mark_dead(sql, str(event.originator_id), dead=False)

    @staticmethod
    def submitted(sql: Sql, event: ApprovalInstance.Submitted, position: int) -> None:
        """An instance a run launched counts its decision in that run's row."""
        run_id = (event.origin or {}).get("run_id")
        if run_id:
            sql.write(
                "INSERT INTO schedule_daily_keys (key, schedule_id, day, started_at) "
                "SELECT ?, schedule_id, day, ? FROM schedule_daily_keys WHERE key = ?",
                (str(event.originator_id), event.at, run_id),
            )

    @staticmethod
    def decided(sql: Sql, event: ApprovalInstance.CommandHandled, position: int) -> None:
        row = sql.execute(
            "SELECT schedule_id, day, started_at FROM schedule_daily_keys WHERE key = ?",
            (str(event.originator_id),),
        ).fetchone()
        if row is None or row[2] is None:
            return
        started = as_instant(row[2])
        assert started is not None
        seconds = sql.seconds(event.at - started)
        sql.write(
            "UPDATE schedule_daily SET decisions = decisions + 1, "
            "decision_total_seconds = decision_total_seconds + ?, "
            "mean_decision_seconds = (decision_total_seconds + ?) / (decisions + 1) "
            "WHERE schedule_id = ? AND day = ?",
            (seconds, seconds, row[0], row[1]),
        )


def _mark_dead(sql: Sql, key: str, dead: bool) -> None:
    """Count the run in its day's `dead_letters`, or take it out, if it was not already."""
    change, was = (1, 0) if dead else (-1, 1)
    sql.write(
        "UPDATE schedule_daily SET dead_letters = dead_letters + ? WHERE schedule_id = "
        "(SELECT schedule_id FROM schedule_daily_keys WHERE key = ? AND dead = ?) "
        "AND day = (SELECT day FROM schedule_daily_keys WHERE key = ?)",
        (change, key, was, key),
    )
    sql.write("UPDATE schedule_daily_keys SET dead = ? WHERE key = ?", (1 - was, key))


def _add_one(sql: Sql, column: str, key: str) -> None:
    sql.write(
        f"UPDATE schedule_daily SET {column} = {column} + 1 "  # noqa: S608
        "WHERE schedule_id = (SELECT schedule_id FROM schedule_daily_keys WHERE key = ?) "
        "AND day = (SELECT day FROM schedule_daily_keys WHERE key = ?)",
        (key, key),
    )
