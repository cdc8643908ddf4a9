"""Job traces for what-if scheduling: one model (``model``), importers for the Alibaba openb
and DLRM traces, SWF and schedstream's native format, and ``events.to_events`` to render a
trace as a contract event stream. The formats are described in services/traces/README.md."""
