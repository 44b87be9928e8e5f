"""Readers for the data published with NPHardEval (text benchmark, versions V0, V1, ...) and NPHardEval4V.

`read_peer` turns the peer files into `PeerRecord`s whose `data` validates against our task data models
(`get_task(task).load(record.data)`); `read_peer_answers` reads the answers files shipped with V1/V2;
`compare_with_answers` checks our exact solvers against those answers. File formats are described in
shared/peers/MANIFEST.md, quirks in docs/nphardeval4v-peer-spec.md (sections 4 and 6).

Canonical order: record i of a JSON file is level i//10 + 1; TSP/GCP records are ordered by file level,
then instance (CSV file number / block position in the DIMACS file). `peer_index` is that position.

Modules: `formats` (layout of the published data, `PeerRecord`), `fields` (checked accessors), one
reader per file family (`json_tasks`, `tsp_files`, `gcp_files`), `read` (a whole folder), `compare` (our
solvers against the published answers).
"""
