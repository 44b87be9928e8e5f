"""Real graph sources, all offline, plus loaders for user files: one module per source family (`flights`,
`films`, `social`, `molecules`), `base` (the `Source` type), `builtin` and `registry` (sources by name),
`user_copies` (the user's copies of the paper's sources).

Built-in sources (each loaded on first use and cached per process):

| name | scenario | graph | licence |
|---|---|---|---|
| `us-airports` | flights | 352 US airports (IATA), undirected July 2026 routes, weights = great-circle km | public domain (OurAirports, US DOT BTS) |
| `wikidata-costar` | collaborations | actors joined when they appeared together in a film | CC0 (Wikidata) |
| `wikidata-film-kg` | knowledge | film -- director / genre / country / lead-cast triples | CC0 (Wikidata) |
| `nci-molecules` | molecules | the 5K NCI molecules shipped with RDKit; heavy atoms and bonds | NCI Open Database (public domain) |
| `karate`, `davis`, `florentine`, `les-miserables` | friendships | networkx's classic social graphs | see SOCIAL below |

A source exposes what the random-walk sampler needs (`starts`, `step`) and `induced(ids)`, the
subgraph on original ids with node attributes `name` (a human name), optionally `code` (a preferred
display code such as an IATA code) and `element` (atoms), and edge `weight` where the source has one.
User-file loaders raise `SourceFileError` whose message is one line `file:line: what is wrong`.
"""
