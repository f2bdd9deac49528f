"""The reactor: hears events on the bus and, for each rule whose event and conditions
match and whose cooldown has passed, starts the rule's action; every fire is recorded.

It runs under the supervisor like any agent (``run`` until cancelled; ``health`` feeds
``/api/v1/health``). Events reach it through its own bounded bus queue, so publishers never
wait for it; a flood drops the oldest events (counted), which costs at most a fire that a
later event brings anyway. An action only *starts* an agent's cycle
(``ScheduledAgent.start_now``): the cycle runs as its own task and lands in ``agent_runs``
with the trigger ``reactor:<rule>``; an agent already running counts as a skipped fire.
Nothing here raises into the bus: a failing action or fire log is recorded and logged, and
the next event is handled as usual. Memory content never reaches the log.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from mnemonic.events.bus import Unsubscribe
from mnemonic.events.types import Event
from mnemonic.reactor.cooldown import Cooldowns
from mnemonic.reactor.fires import SKIPPED, Fire, FireLog
from mnemonic.reactor.matcher import matches
from mnemonic.reactor.rules import Rule
from mnemonic.runtime.agent_runs import AlreadyRunning

log = logging.getLogger(__name__)

_ERROR_CHARS = 500
DEFAULT_QUEUE_SIZE = 256


class Startable(Protocol):
    def start_now(self, trigger: str) -> object: ...


class Agents(Protocol):
    """The registered cycle agents (``runtime.agent_runs.AgentRegistry``)."""

    def get(self, name: str) -> Startable | None: ...


class Subscribe(Protocol):
    def __call__(
        self,
        handler: Callable[[Event], Any],
        types: Iterable[str] | None = None,
        *,
        name: str,
        queue_size: int = ...,
        on_drop: Callable[[], None] | None = None,
    ) -> Unsubscribe: ...


@dataclass(slots=True)
class RuleState:
    fires: int = 0  # all time (restored from the log)
    last: Fire | None = None
    held: int = 0  # matched within the cooldown, since start
    unavailable: int = 0  # matched, but its agent is not scheduled here, since start


class ReactorRunner:
    name = "reactor"

    def __init__(
        self,
        rules: Sequence[Rule],
        agents: Agents,
        fires: FireLog,
        subscribe: Subscribe,
        *,
        clock: Callable[[], float],
        wall: Callable[[], datetime],
        queue_size: int = DEFAULT_QUEUE_SIZE,
        enabled: bool = True,
    ) -> None:
        self.rules = list(rules)
        self.enabled = enabled
        self._agents = agents
        self._fires = fires
        self._subscribe = subscribe
        self._clock = clock
        self._wall = wall
        self._queue_size = queue_size
        self._by_type: dict[str, list[Rule]] = {}
        for rule in self.rules:
            if rule.enabled:
                self._by_type.setdefault(rule.on, []).append(rule)
        self._state = {rule.name: RuleState() for rule in self.rules}
        self.cooldowns = Cooldowns()
        self.events = 0
        self.dropped = 0
        self.errors = 0
        self.subscribed = False
        self._unsubscribe: Unsubscribe | None = None

    # ---- lifecycle ---------------------------------------------------------------------

    async def open(self) -> None:
        """Restore counts and cooldowns from the log and subscribe. The daemon awaits this
        before it reports ready, so no event published after start-up is missed (the
        supervised task used to subscribe whenever it first ran)."""
        if self._unsubscribe is not None:
            return
        await self.restore()
        if self.enabled and self._by_type:
            self._unsubscribe = self._subscribe(
                self.handle,
                sorted(self._by_type),
                name="reactor",
                queue_size=self._queue_size,
                on_drop=self._on_drop,
            )
            self.subscribed = True

    async def run(self) -> None:
        """Listen until cancelled (opening first if the daemon has not)."""
        await self.open()
        try:
            await asyncio.Event().wait()
        finally:
            self.subscribed = False
            if self._unsubscribe is not None:
                self._unsubscribe()
                self._unsubscribe = None

    async def restore(self) -> None:
        try:
            totals = await self._fires.totals()
        except Exception as exc:  # noqa: BLE001 - counts are a view; reacting matters more
            log.warning("reactor fire log unavailable, counting from zero: %s", exc)
            return
        now, wall = self._clock(), self._wall()
        for name, total in totals.items():
            state = self._state.get(name)
            if state is None:  # a rule that is gone from the configuration
                continue
            state.fires = total.count
            state.last = total.last
            if total.last is not None:
                ago = (wall - total.last.at).total_seconds()
                self.cooldowns.restore(name, ago, now)

    def _on_drop(self) -> None:
        self.dropped += 1

    # ---- reacting --------------------------------------------------------------------

    async def handle(self, event: Event) -> None:
        """Every enabled rule on this event type, in configuration order."""
        rules = self._by_type.get(event.type)
        if not rules:
            return
        self.events += 1
        try:
            payload = event.payload()
        except Exception:  # an event that cannot be read fires nothing
            self.errors += 1
            log.warning("reactor could not read a %s event", event.type, exc_info=True)
            return
        for rule in rules:
            try:
                if matches(rule.conditions, payload):
                    await self._fire(rule, event)
            except Exception:  # one rule's fault must not keep the others from reacting
                self.errors += 1
                log.exception("reactor rule %s failed on a %s event", rule.name, event.type)

    async def _fire(self, rule: Rule, event: Event) -> None:
        state = self._state[rule.name]
        agent = self._agents.get(rule.action.agent)
        if agent is None:
            state.unavailable += 1
            log.debug("reactor rule %s: agent %s is not scheduled", rule.name, rule.action.agent)
            return
        if not self.cooldowns.admit(rule.name, rule.cooldown_s, self._clock()):
            state.held += 1
            return
        fire = self._act(rule, agent, event)
        state.fires += 1
        state.last = fire
        log.info(
            "reactor rule %s fired on %s: %s %s",
            rule.name,
            event.type,
            fire.action,
            fire.outcome,
        )
        try:
            await self._fires.record(fire)
        except Exception as exc:  # noqa: BLE001 - the fire happened; only its record is lost
            self.errors += 1
            log.warning("recording a fire of reactor rule %s failed: %s", rule.name, exc)

    def _act(self, rule: Rule, agent: Startable, event: Event) -> Fire:
        ok, error = True, None
        try:
            agent.start_now(f"reactor:{rule.name}")
        except AlreadyRunning:
            error = f"{SKIPPED}agent {rule.action.agent!r} was already running"
        except Exception as exc:  # noqa: BLE001 - recorded as a failed fire
            ok, error = False, f"{type(exc).__name__}: {exc}"[:_ERROR_CHARS]
            log.warning("reactor rule %s: %s failed: %s", rule.name, rule.action.describe(), error)
        return Fire(rule.name, self._wall(), event.type, rule.action.describe(), ok, error)

    # ---- views -----------------------------------------------------------------------

    def describe(self) -> list[dict[str, Any]]:
        """Every rule, its definition and what it did (``GET /api/v1/reactor/rules``)."""
        now = self._clock()
        out = []
        for rule in self.rules:
            state = self._state[rule.name]
            last = state.last
            out.append(
                {
                    "name": rule.name,
                    "on": rule.on,
                    "when": dict(rule.definition["when"]),
                    "do": dict(rule.definition["do"]),
                    "cooldown_s": rule.cooldown_s,
                    "enabled": rule.enabled and self.enabled,
                    "builtin": rule.builtin,
                    "agent_available": self._agents.get(rule.action.agent) is not None,
                    "fires": state.fires,
                    "held": state.held,
                    "last_fire": None
                    if last is None
                    else {
                        "at": last.at,
                        "ok": last.ok,
                        "outcome": last.outcome,
                        "event_type": last.event_type,
                        "error": last.error,
                    },
                    "cooldown_remaining_s": round(
                        self.cooldowns.remaining(rule.name, rule.cooldown_s, now), 3
                    ),
                }
            )
        return out

    def health(self) -> dict[str, Any]:
        states = self._state.values()
        return {
            "enabled": self.enabled,
            "rules": len(self.rules),
            "active_rules": sum(1 for r in self.rules if r.enabled) if self.enabled else 0,
            "fires": sum(s.fires for s in states),
            "held": sum(s.held for s in states),
            "events": self.events,
            "dropped": self.dropped,
            "errors": self.errors,
        }
