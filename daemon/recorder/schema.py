"""SQLite schema of the recording (WAL mode; one file under the data dir)."""

SCHEMA_VERSION = 1

DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    intent TEXT NOT NULL,
    start_url TEXT,
    agent TEXT NOT NULL,            -- JSON AgentInfo
    source TEXT NOT NULL,
    created_at REAL NOT NULL,
    steps INTEGER NOT NULL DEFAULT 0,
    latest_reward REAL,
    outcome TEXT,
    answer TEXT,
    ended_at REAL
);
CREATE TABLE IF NOT EXISTS checklists (
    session_id TEXT PRIMARY KEY REFERENCES sessions(session_id),
    source TEXT NOT NULL,
    text TEXT NOT NULL,
    items TEXT NOT NULL             -- JSON list of ChecklistItem
);
CREATE TABLE IF NOT EXISTS observations (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(session_id),
    step INTEGER NOT NULL,
    url TEXT NOT NULL,
    axtree TEXT NOT NULL,
    screenshot_mime TEXT,
    screenshot BLOB,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS score_requests (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(session_id),
    request_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    samples INTEGER NOT NULL,
    approval TEXT NOT NULL,
    best INTEGER,
    decision TEXT,                  -- JSON DecisionInfo, once known
    queue_ms REAL,
    model_ms REAL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS candidate_results (
    score_id INTEGER NOT NULL REFERENCES score_requests(id),
    idx INTEGER NOT NULL,
    thought TEXT NOT NULL,
    action TEXT NOT NULL,
    reward REAL,
    feedback TEXT NOT NULL,
    parsed_samples INTEGER NOT NULL,
    probabilities TEXT NOT NULL,
    items TEXT NOT NULL,            -- JSON per-item label probabilities (mean over samples)
    PRIMARY KEY (score_id, idx)
);
CREATE TABLE IF NOT EXISTS samples (
    score_id INTEGER NOT NULL REFERENCES score_requests(id),
    candidate INTEGER NOT NULL,
    sample INTEGER NOT NULL,
    text TEXT NOT NULL,
    reward REAL,
    items TEXT NOT NULL,            -- JSON per-item label probabilities of this sample
    PRIMARY KEY (score_id, candidate, sample)
);
CREATE TABLE IF NOT EXISTS candidate_judging (
    score_id INTEGER NOT NULL REFERENCES score_requests(id),
    idx INTEGER NOT NULL,           -- a candidate_results row whose judgement left samples
    unparsed_samples INTEGER NOT NULL,  -- unparsed, or that saw a screenshot (else no row)
    judge_inputs TEXT NOT NULL,     -- text / text+image
    unparsed TEXT NOT NULL,         -- JSON list: each sample's unparsed reason, or null
    PRIMARY KEY (score_id, idx)
);
CREATE TABLE IF NOT EXISTS approvals (
    request_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(session_id),
    step INTEGER NOT NULL,
    candidate_index INTEGER NOT NULL,
    reward REAL,
    reason TEXT NOT NULL,
    feedback TEXT NOT NULL,
    created_at REAL NOT NULL,
    decision TEXT,                  -- approve / reject / edit / timeout
    status TEXT,
    action TEXT,
    decided_by TEXT,
    note TEXT,
    decided_at REAL
);
CREATE TABLE IF NOT EXISTS approval_guards (
    request_id TEXT PRIMARY KEY REFERENCES approvals(request_id),
    hits TEXT NOT NULL              -- JSON list of GuardHit: the guard rules that held the step
);
CREATE TABLE IF NOT EXISTS actions (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(session_id),
    step INTEGER NOT NULL,
    action TEXT NOT NULL,
    thought TEXT,
    source TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS observation_boxes (
    observation_id INTEGER PRIMARY KEY REFERENCES observations(id),
    boxes TEXT NOT NULL             -- JSON {bid: [left, top, width, height]} in screenshot pixels
);
CREATE TABLE IF NOT EXISTS session_scorers (
    session_id TEXT PRIMARY KEY REFERENCES sessions(session_id),
    model TEXT NOT NULL,            -- the model that scored the session (as serve loaded it)
    backend TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS session_scorer_settings (
    session_id TEXT PRIMARY KEY REFERENCES sessions(session_id),
    settings TEXT NOT NULL          -- JSON: prompt style, temperature, sampling, context, ...
);
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    body TEXT NOT NULL,             -- JSON, as a subscriber received it
    created_at REAL NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS labels (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(session_id),
    step INTEGER NOT NULL,
    action TEXT NOT NULL,           -- the scored candidate's action
    items TEXT NOT NULL,            -- JSON list: yes / in_progress / no per checklist item
    source TEXT NOT NULL,           -- environment / person: who knew the truth
    labelled_by TEXT NOT NULL,      -- the connection's role and name
    note TEXT,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS tree_nodes (
    id INTEGER PRIMARY KEY,         -- one row per update (tree.node), in arrival order
    session_id TEXT NOT NULL REFERENCES sessions(session_id),
    node INTEGER NOT NULL,          -- the node's id in the session's search tree (root 0)
    parent INTEGER,                 -- null for the root
    depth INTEGER NOT NULL,
    action TEXT,                    -- the action from its parent (null for the root)
    thought TEXT,
    reward REAL,                    -- its value: the judge's reward for the action
    count INTEGER NOT NULL,         -- policy proposals of the action
    status TEXT NOT NULL,           -- frontier / expanded / leaf / done / failed / stale
    executed INTEGER NOT NULL,      -- 1: its action ran first-hand
    replays INTEGER NOT NULL,       -- times its action ran again (backtracking)
    step INTEGER,                   -- the scored step its action was a candidate of
    expanded_at INTEGER,            -- the step at which its children were scored
    url TEXT,
    error TEXT,
    event TEXT NOT NULL,            -- scored / replayed / executed / expanded / stale / path
    trying INTEGER,                 -- the node the search was trying
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS observations_by_session ON observations(session_id, step);
CREATE INDEX IF NOT EXISTS scores_by_session ON score_requests(session_id, step);
CREATE INDEX IF NOT EXISTS actions_by_session ON actions(session_id, id);
CREATE INDEX IF NOT EXISTS sessions_by_time ON sessions(created_at);
CREATE INDEX IF NOT EXISTS labels_by_session ON labels(session_id, step);
CREATE INDEX IF NOT EXISTS tree_nodes_by_session ON tree_nodes(session_id, node);
"""
