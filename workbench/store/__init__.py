"""`RunStore`: every run's snapshots, steps and state, durable in SQLite, as the run happens.

The store is a `RunObserver`: an `Agent` hands it the loop's events and it writes them, so a run
is readable (from this process or another one) while it is still going, and a process killed
mid-run leaves every step it finished. Two small transactions per step: the snapshot as PREPARE
ends (so the step that was running when a process died can be re-run from its own start), and the
step record with the state after it as the step ends.

A store failure never breaks the run that is writing: it is logged, kept in
`RunStore.write_errors`, and the run goes on.

`_runstore` holds `RunStore`: reading runs back, and the observer side with its transactions and
its policy on failure; `_runwrite` the rows each of a run's events becomes; `_runlog` what the
store remembers of a run while writing it, so that each message and set of tools is written
once; `_query` the run list's SQL, `_frame` a whole list as a DataFrame; `workbench._storage` how
the rows look in SQLite.
"""

from workbench._storage import RunNotFound, StoreError
from workbench.store._query import RunSummary
from workbench.store._runstore import DEFAULT_STORE_PATH, STORE_ENV, RunStore

__all__ = ["DEFAULT_STORE_PATH", "STORE_ENV", "RunNotFound", "RunStore", "RunSummary", "StoreError"]
