-- Interactive sessions (seed 000_b919fc473c808d12), PostgreSQL dialect.
-- Created by `episodes sessions init postgresql://...` (builder.sessions.db.init_database).
-- The builder validates every row again when reading: a database may lack these constraints.

-- One row per interactive session.
CREATE TABLE IF NOT EXISTS sessions (
    session_id          INTEGER PRIMARY KEY,  -- unique identifier for each session
    initial_instruction TEXT,                 -- the initial instruction given for the session
    initial_code        TEXT,                 -- the initial code state for the session
    initial_exec_output TEXT,                 -- the initial execution output for the session
    verified            BOOLEAN               -- verified by the user; only verified sessions train
);

-- One row per action (an edit, a run, a message) of a session.
CREATE TABLE IF NOT EXISTS actions (
    action_uuid TEXT PRIMARY KEY,                              -- unique identifier for each action
    session_id  INTEGER REFERENCES sessions (session_id),      -- the session this action belongs to
    action_id   INTEGER,                                       -- chronological order within a session
    action_type TEXT CHECK (action_type IN ('input', 'set_instruction', 'set_code', 'set_exec_output')),
    action      TEXT,                                          -- the content of the action
    correct     BOOLEAN,                                       -- optional; incorrect: setup, not trained on
    source      TEXT CHECK (source IN ('human', 'ai', 'dataset'))
);

CREATE INDEX IF NOT EXISTS actions_session_id ON actions (session_id);
