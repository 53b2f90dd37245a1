"""Reads from the recording: session lists, whole histories, and state to resume a session."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from webshepherd.daemon.engine.types import Turn
from webshepherd.daemon.recorder.store import Recorder
from webshepherd.daemon.sessions.state import SessionState
from webshepherd.protocol.common import AgentInfo, ChecklistItem, SessionSummary
from webshepherd.protocol.replies import Checklist


def _summary(row: sqlite3.Row) -> SessionSummary:
    return SessionSummary(
        session_id=row["session_id"],
        intent=row["intent"],
        start_url=row["start_url"],
        agent=AgentInfo.model_validate_json(row["agent"]),
        source=row["source"],
        state="ended" if row["ended_at"] is not None else "running",
        outcome=row["outcome"],
        steps=row["steps"],
        latest_reward=row["latest_reward"],
        created_at=row["created_at"],
        ended_at=row["ended_at"],
    )


class History:
    """Read side of :class:`Recorder`: its own connection (WAL: reads never wait for the
    writer thread, and see every committed write)."""

    def __init__(self, recorder: Recorder):
        self.db = sqlite3.connect(str(recorder.path), check_same_thread=False)
        self.db.row_factory = sqlite3.Row

    def close(self) -> None:
        self.db.close()

    def list_sessions(self, limit: int = 100) -> list[SessionSummary]:
        rows = self.db.execute(
            "SELECT * FROM sessions ORDER BY created_at DESC, rowid DESC LIMIT ?", (limit,)
        ).fetchall()
        return [_summary(r) for r in rows]

    def summary(self, session_id: str) -> SessionSummary | None:
        row = self.db.execute(
            "SELECT * FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        return _summary(row) if row else None

    def checklist(self, session_id: str) -> Checklist | None:
        row = self.db.execute(
            "SELECT * FROM checklists WHERE session_id = ?", (session_id,)
        ).fetchone()
        if row is None:
            return None
        items = [ChecklistItem.model_validate(i) for i in json.loads(row["items"])]
        return Checklist(session_id=session_id, source=row["source"], items=items, text=row["text"])

    def events(self, session_id: str) -> list[dict[str, Any]]:
        """The session's events as subscribers got them (AX trees put back from
        ``observations``, where they are stored once)."""
        rows = self.db.execute(
            "SELECT body FROM events WHERE session_id = ? ORDER BY seq", (session_id,)
        ).fetchall()
        out = [json.loads(r["body"]) for r in rows]
        trees: dict[int, str] | None = None
        for e in out:
            if e.get("type") == "observed" and "axtree" not in e:
                if trees is None:
                    trees = {
                        o["step"]: o["axtree"]
                        for o in self.db.execute(
                            "SELECT step, axtree FROM observations WHERE session_id = ? "
                            "ORDER BY id",
                            (session_id,),
                        )
                    }
                e["axtree"] = trees.get(e.get("step", -1), "")
        return out

    def load_state(self, session_id: str) -> SessionState | None:
        """Rebuild what the session machine needs to continue a session after a restart."""
        from webshepherd.daemon.sessions.convert import parsed_checklist

        row = self.db.execute(
            "SELECT * FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        if row is None:
            return None
        st = SessionState(
            session_id,
            row["intent"],
            row["start_url"],
            AgentInfo.model_validate_json(row["agent"]),
            row["source"],
            row["created_at"],
            latest_reward=row["latest_reward"],
            ended=row["ended_at"] is not None,
            outcome=row["outcome"],
            answer=row["answer"],
            ended_at=row["ended_at"],
        )
        cl = self.checklist(session_id)
        if cl is not None:
            st.set_checklist(parsed_checklist(cl))
        obs = self.db.execute(
            "SELECT step, url, axtree FROM observations WHERE session_id = ? "
            "ORDER BY id DESC LIMIT 1",
            (session_id,),
        ).fetchone()
        if obs is not None:
            st.step, st.url, st.axtree = obs["step"], obs["url"], obs["axtree"]
        for a in self.db.execute(
            "SELECT step, action, thought FROM actions WHERE session_id = ? ORDER BY id",
            (session_id,),
        ):
            st.history.append(Turn(thought=a["thought"] or "", action=a["action"]))
        for s in self.db.execute(
            "SELECT id, step FROM score_requests WHERE session_id = ? ORDER BY id", (session_id,)
        ).fetchall():
            cands = self.db.execute(
                "SELECT action, reward FROM candidate_results WHERE score_id = ? ORDER BY idx",
                (s["id"],),
            ).fetchall()
            st.remember_candidates(s["step"], [(c["action"], c["reward"]) for c in cands])
            rewards = [c["reward"] for c in cands if c["reward"] is not None]
            if rewards:
                st.step_rewards[s["step"]] = max(rewards)
        for a in self.db.execute(
            "SELECT step, action FROM actions WHERE session_id = ? ORDER BY id", (session_id,)
        ):
            for action, reward in st.step_candidates.get(a["step"], []):
                if action == a["action"] and reward is not None:
                    st.step_rewards[a["step"]] = reward
                    break
        return st
