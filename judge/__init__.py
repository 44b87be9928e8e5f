"""The GraphVerse judge: VGR-Score from verbalized graph evidence (GraphVerse paper §4.4, C.3, D.1, D.2, §5.4).

* `judge.evidence`      the evidence of an instance, from its benchmark plug-in (`Benchmark.judge_evidence`; types in
                        `evalcore.evidence`, GraphVerse's builder in `gie.evidence`)
* `judge.rule_scorer`   the rule-based scorer (default judge; cross-check of LLM judges); its reader:
                        `rule_notation` (every notation to canonical claims), `rule_grammar`, `rule_claims`,
                        `rule_checks`, and `rule_v3` (claims -> atoms -> VGR v3)
* `judge.critical`      VGR v3: the critical facts of an instance (from the gold optimum + networkx)
* `judge.vgr3`          VGR v3: the formula and the closest-optimum match
* `judge.llm_judge`     any litellm model as the scoring agent: versioned templates, JSON schema, bounded retries
                        (its calls go through `evalcore.llm_client`)
* `judge.grounding`     the grounded LLM judge (prompt v3): quote check, structured facts checked by code, dedupe by fact
* `judge.schema`        step-level verdicts, structured facts, VGR-Score, the judgments table
* `judge.cache`         content-addressed judgment cache
* `judge.vgr`           read/join/aggregate judgments (per task, edit, model)
* `judge.agreement`     judge vs judge / repeat / human tables (Tables 9, 10)
* `judge.failure_modes` perception / visual reasoning / text reasoning breakdown (Figure 3)

This package imports only itself and `evalcore`: the run's judge stage, one layer up, drives it, and
`nphe4v judge RUN` reruns that stage alone.
See docs/judge.md.
"""
