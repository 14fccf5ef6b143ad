BEGIN TRANSACTION;
CREATE TABLE messages (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        hash TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    ) WITHOUT ROWID;
INSERT INTO "messages" VALUES('run_d05b39d85cc3d903',0,'3174994d29b7b49320acc8639d11dfe5','{"role":"user","parts":[{"kind":"text","text":"Count for me."}],"run_id":"run_d05b39d85cc3d903","execution_id":"exe_cb41d4ea38af4354","step":0}');
INSERT INTO "messages" VALUES('run_d05b39d85cc3d903',1,'6b46dcf484379045b132cbef28ed07a5','{"role":"assistant","parts":[{"kind":"tool_call","name":"add","arguments":{"a":0,"b":1},"call_id":"c1","invalid_arguments":null}],"run_id":"run_d05b39d85cc3d903","execution_id":"exe_cb41d4ea38af4354","step":1}');
INSERT INTO "messages" VALUES('run_d05b39d85cc3d903',2,'94936bac00cb8a49b7cea5bf131f008f','{"role":"tool","parts":[{"kind":"tool_result","call_id":"c1","name":"add","content":"1","is_error":false}],"run_id":"run_d05b39d85cc3d903","execution_id":"exe_cb41d4ea38af4354","step":1}');
INSERT INTO "messages" VALUES('run_d05b39d85cc3d903',3,'857a02714162b6d9933f85972b3df28e','{"role":"assistant","parts":[{"kind":"text","text":"total 1"}],"run_id":"run_d05b39d85cc3d903","execution_id":"exe_cb41d4ea38af4354","step":2}');
CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        agent_name TEXT NOT NULL,
        parent_run_id TEXT,
        rerun_of_run TEXT,
        rerun_of_step INTEGER,
        model_name TEXT,
        status TEXT NOT NULL,
        stop_reason TEXT,
        step INTEGER NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cost REAL,
        output TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        state TEXT NOT NULL,
        state_messages TEXT NOT NULL
    );
INSERT INTO "runs" VALUES('run_d05b39d85cc3d903','counter',NULL,NULL,NULL,'counter','completed','completed',2,20,10,0.0,'total 1',1.79544080218656182295e+09,1.79544080219499397276e+09,'{"schema_version":2,"run_id":"run_d05b39d85cc3d903","execution_id":"exe_cb41d4ea38af4354","parent_run_id":null,"parent_call_id":null,"depth":0,"agent_name":"counter","status":"completed","stop_reason":"completed","step":2,"next_phase":"continuation","usage":{"input_tokens":20,"output_tokens":10,"requests":2,"cost":0.0,"cache_read_tokens":0,"reasoning_tokens":0},"pending":[],"approved":[],"retries":{},"response_retries":0,"errors_total":0,"errors_consecutive":0,"elapsed":0.0032167230165214278,"hook_turns":0,"grace_turn":false,"error":null,"created_at":1795440802.1865618,"rerun_of":null,"trace":null,"waiting_subruns":{},"subrun_answers":{},"metadata":{},"trace_id":"6023fb4ad94cf918b2dfd6886be0f1e9"}','[[0,4]]');
CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL);
INSERT INTO "schema_version" VALUES(1,1.79544080218979978554e+09);
CREATE TABLE snapshots (
        id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        step INTEGER NOT NULL,
        body TEXT NOT NULL,
        messages TEXT NOT NULL
    );
INSERT INTO "snapshots" VALUES('snap_8dc026c7eec4aa98','run_d05b39d85cc3d903',1,'{"id":"snap_8dc026c7eec4aa98","run_id":"run_d05b39d85cc3d903","execution_id":"exe_cb41d4ea38af4354","parent_run_id":null,"step":1,"model_name":"counter","model_settings":{},"tool_names":["add"],"tool_schema_hash":"0d6e716c29876ac0","system_prompt_hash":null,"budget":{"steps_used":0,"tokens_used":0,"seconds_used":7.962000381667167e-6,"cost_used":0.0,"steps_left":7,"tokens_left":null,"seconds_left":null,"cost_left":null},"message_count":1,"created_at":1795440802.1916947,"state":{"schema_version":2,"run_id":"run_d05b39d85cc3d903","execution_id":"exe_cb41d4ea38af4354","parent_run_id":null,"parent_call_id":null,"depth":0,"agent_name":"counter","status":"running","stop_reason":null,"step":0,"next_phase":"prepare","usage":{"input_tokens":0,"output_tokens":0,"requests":0,"cost":0.0,"cache_read_tokens":0,"reasoning_tokens":0},"pending":[],"approved":[],"retries":{},"response_retries":0,"errors_total":0,"errors_consecutive":0,"elapsed":0.0,"hook_turns":0,"grace_turn":false,"error":null,"created_at":1795440802.1865618,"rerun_of":null,"trace":null,"waiting_subruns":{},"subrun_answers":{},"metadata":{},"trace_id":"6023fb4ad94cf918b2dfd6886be0f1e9"},"provider":"workbench","server_address":null,"server_port":null,"tool_definitions":[{"name":"add","description":"Add two integers.","parameters":{"additionalProperties":false,"properties":{"a":{"title":"A","type":"integer"},"b":{"title":"B","type":"integer"}},"required":["a","b"],"type":"object"}}]}','[[0,1]]');
INSERT INTO "snapshots" VALUES('snap_204589c85bebb1af','run_d05b39d85cc3d903',2,'{"id":"snap_204589c85bebb1af","run_id":"run_d05b39d85cc3d903","execution_id":"exe_cb41d4ea38af4354","parent_run_id":null,"step":2,"model_name":"counter","model_settings":{},"tool_names":["add"],"tool_schema_hash":"0d6e716c29876ac0","system_prompt_hash":null,"budget":{"steps_used":1,"tokens_used":15,"seconds_used":0.0028064440048183315,"cost_used":0.0,"steps_left":6,"tokens_left":null,"seconds_left":null,"cost_left":null},"message_count":3,"created_at":1795440802.194266,"state":{"schema_version":2,"run_id":"run_d05b39d85cc3d903","execution_id":"exe_cb41d4ea38af4354","parent_run_id":null,"parent_call_id":null,"depth":0,"agent_name":"counter","status":"running","stop_reason":null,"step":1,"next_phase":"prepare","usage":{"input_tokens":10,"output_tokens":5,"requests":1,"cost":0.0,"cache_read_tokens":0,"reasoning_tokens":0},"pending":[],"approved":[],"retries":{},"response_retries":0,"errors_total":0,"errors_consecutive":0,"elapsed":0.0,"hook_turns":0,"grace_turn":false,"error":null,"created_at":1795440802.1865618,"rerun_of":null,"trace":null,"waiting_subruns":{},"subrun_answers":{},"metadata":{},"trace_id":"6023fb4ad94cf918b2dfd6886be0f1e9"},"provider":"workbench","server_address":null,"server_port":null,"tool_definitions":[{"name":"add","description":"Add two integers.","parameters":{"additionalProperties":false,"properties":{"a":{"title":"A","type":"integer"},"b":{"title":"B","type":"integer"}},"required":["a","b"],"type":"object"}}]}','[[0,3]]');
CREATE TABLE steps (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        step INTEGER NOT NULL,
        body TEXT NOT NULL,
        messages_in TEXT NOT NULL,
        new_messages TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    );
INSERT INTO "steps" VALUES('run_d05b39d85cc3d903',0,1,'{"index":1,"run_id":"run_d05b39d85cc3d903","execution_id":"exe_cb41d4ea38af4354","response":{"parts":[{"kind":"tool_call","name":"add","arguments":{"a":0,"b":1},"call_id":"c1","invalid_arguments":null}],"usage":{"input_tokens":10,"output_tokens":5,"requests":1,"cost":0.0,"cache_read_tokens":0,"reasoning_tokens":0},"finish_reason":"tool_calls","model_name":"counter","response_id":null,"time_to_first_token":null},"tool_outcomes":[{"call_id":"c1","name":"add","arguments":{"a":0,"b":1},"status":"ok","content":"1","duration":0.0011724040014087223,"subagent":null,"started_at":1795440802.1922805,"replayed":false}],"usage":{"input_tokens":10,"output_tokens":5,"requests":1,"cost":0.0,"cache_read_tokens":0,"reasoning_tokens":0},"timing":{"prepare":0.00113909399806289,"inference":0.00024027800100157037,"tools":0.0014050290046725422,"hooks":0.0,"continuation":0.000018808001186698675,"telemetry":0.00018069999350700527,"time_to_first_token":null,"per_tool":[["c1","add",0.0011724040014087223]],"per_hook":[]},"status":"running","stop_reason":null,"tools_offered":["add"],"tools_hidden":[],"snapshot_id":"snap_8dc026c7eec4aa98","started_at":1795440802.1917324,"hook_errors":[],"hook_messages":[],"phase_starts":[["prepare",1795440802.1908052],["inference",1795440802.1919775],["tools",1795440802.1922317],["continuation",1795440802.1936557]],"model_started_at":1795440802.1920035,"model_duration":0.00014365300012286752,"model_error":null,"ended_at":1795440802.1937227}','[[0,1]]','[[1,3]]');
INSERT INTO "steps" VALUES('run_d05b39d85cc3d903',1,2,'{"index":2,"run_id":"run_d05b39d85cc3d903","execution_id":"exe_cb41d4ea38af4354","response":{"parts":[{"kind":"text","text":"total 1"}],"usage":{"input_tokens":10,"output_tokens":5,"requests":1,"cost":0.0,"cache_read_tokens":0,"reasoning_tokens":0},"finish_reason":"stop","model_name":"counter","response_id":null,"time_to_first_token":null},"tool_outcomes":[],"usage":{"input_tokens":10,"output_tokens":5,"requests":1,"cost":0.0,"cache_read_tokens":0,"reasoning_tokens":0},"timing":{"prepare":0.00023817400506231934,"inference":0.00011672300024656579,"tools":0.00001649500336498022,"hooks":0.0,"continuation":0.000042122002923861146,"telemetry":0.00013119299546815455,"time_to_first_token":null,"per_tool":[],"per_hook":[]},"status":"completed","stop_reason":"completed","tools_offered":["add"],"tools_hidden":[],"snapshot_id":"snap_204589c85bebb1af","started_at":1795440802.1942973,"hook_errors":[],"hook_messages":[],"phase_starts":[["prepare",1795440802.1942174],["inference",1795440802.1944723],["tools",1795440802.194606],["continuation",1795440802.1946318]],"model_started_at":1795440802.1944914,"model_duration":0.00004162199911661446,"model_error":null,"ended_at":1795440802.1947067}','[[0,3]]','[[3,4]]');
CREATE INDEX snapshots_by_run ON snapshots (run_id, step);
COMMIT;
