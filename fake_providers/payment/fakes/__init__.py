"""Upstream fakes chosen by Host header (`router.UpstreamHostRouter`): `stripe` and `record`
over HTTP, `mail` over SMTP. Their commits go through the same `EffectPipeline` (barriers,
fault plan, idempotency) and into the same ledger as the bundled JSON API's."""
