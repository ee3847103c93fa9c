"""ApiVersions (key 18): v0–v5.

- The advertised list comes from the handler registry, capped by ``--emulate-kafka`` (kafkalite.config.releases).
- The response always travels under response header v0, even for flexible versions (KIP-511); the codec's
  ``encode_response`` applies that rule.
- A request at a version we do not serve is not parsed: it gets a *v0* body with UNSUPPORTED_VERSION (35) and
  the full api_keys list, so the client retries at our max (handled in kafkalite.server.connection).
- v3+: ClientSoftwareName/Version must match ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?``, else
  INVALID_REQUEST (42) (librdkafka then retries at v0).
- v3+ tagged fields SupportedFeatures / FinalizedFeaturesEpoch / FinalizedFeatures come from the feature
  table of the emulated release (``kafkalite.metadata.features``: metadata.version and kraft.version as Kafka 3.9
  reports them, group.version / share.version under 4.3, none for 2.8); ZkMigrationReady stays false
  (omitted). ``transaction.version`` 2 (finalized under the 4.x profiles and the default) moves the Java client
  4.x to KIP-890 part 2's transaction flow; the 3.x profiles leave it out (classic flow).
- The 4.x tables also raise each API's minimum to what that release still serves (KIP-896).
- v5 (KIP-1242): a client may name the cluster and node it means to reach; both or neither (else
  INVALID_REQUEST), and a cluster id or node id that is not this broker's answers REBOOTSTRAP_REQUIRED.
"""
from __future__ import annotations

import re

from kafkalite.config.releases import below_served, table_for
from kafkalite.handlers.registry import RequestContext, advertised, handler
from kafkalite.metadata.features import apply_features
from kafkalite.state import BrokerState
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import ApiVersionsRequest, ApiVersionsResponse

_SOFTWARE_RE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


def api_keys(state: BrokerState) -> list[ApiVersionsResponse.ApiVersion]:
    release = state.config.emulate_kafka
    return [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, lo, hi in advertised(table_for(release), below_served(release))]


def unsupported_version_response(state: BrokerState) -> ApiVersionsResponse:
    return ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=api_keys(state))


@handler(ApiVersionsRequest, min_version=0, max_version=5)
async def api_versions(ctx: RequestContext, req: ApiVersionsRequest) -> ApiVersionsResponse:
    state = ctx.broker
    if ctx.version >= 3 and not (_SOFTWARE_RE.match(req.client_software_name or "")
                                 and _SOFTWARE_RE.match(req.client_software_version or "")):
        return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST, api_keys=api_keys(ctx.broker))
    if ctx.version >= 5 and (req.cluster_id is not None or req.node_id != -1):
        if req.cluster_id is None or req.node_id == -1:
            return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST, api_keys=api_keys(ctx.broker))
        if req.cluster_id != state.cluster_id or req.node_id != state.node_id:
            return ApiVersionsResponse(error_code=ErrorCode.REBOOTSTRAP_REQUIRED, api_keys=api_keys(ctx.broker))
    resp = ApiVersionsResponse(error_code=ErrorCode.NONE, api_keys=api_keys(ctx.broker))
    levels = state.features
    apply_features(resp, state.config.emulate_kafka, ctx.version, levels.finalized(), levels.epoch)
    return resp
