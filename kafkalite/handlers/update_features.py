"""UpdateFeatures (key 57): v0–v2, as a single-node Kafka answers it (QuorumController.updateFeatures,
FeatureControlManager): per feature under a 3.9 profile, as one batch under a 4.x one (below).

Each FeatureUpdate is checked on its own against the emulated release's feature table (``kafkalite.metadata.features``):
its level must lie in the range this node supports ("Local controller N only supports versions A-B", or "does
not support this feature" for a name it does not know), a lower level needs upgrade type SAFE_DOWNGRADE or
UNSAFE_DOWNGRADE, a higher one UPGRADE (v0's AllowDowngrade is not read: the controller takes the
UpgradeType field, which a v0 request leaves at UPGRADE, so a v0 downgrade is refused as Kafka refuses it);
metadata.version may not go below 3.3-IV0 nor be downgraded across a level whose metadata changed (UNSAFE_DOWNGRADE is refused too: "Unsafe
metadata downgrade is not supported in this version."). Failures answer INVALID_UPDATE_VERSION with Kafka's
message in that feature's result; the top-level error stays NONE and the updates that passed are applied (as
the controller's atomic batch of their records). ValidateOnly (v1) checks without applying. Applied levels are
persisted and reported by ApiVersions (describeFeatures) with a FinalizedFeaturesEpoch one higher per change.
Kafka 4.x made the request atomic: the first update that fails answers its error and message at the top level
(with no results) and nothing is applied; otherwise every update is applied and listed with NONE. v2 has no
per-feature results at all.
- Authorization: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED at the top level and no results.
"""
from __future__ import annotations

from kafkalite import authz
from kafkalite.config.releases import config_release
from kafkalite.handlers.registry import RequestContext, handler
from kafkalite.metadata import elr_configs
from kafkalite.metadata.features import UPGRADE
from kafkalite.runtime.slices import Slices
from kafkalite_wire.errors import ErrorCode
from kafkalite_wire.messages import UpdateFeaturesRequest, UpdateFeaturesResponse

_Result = UpdateFeaturesResponse.UpdatableFeatureResult
MAX_NAME = 32767   # longest string a response can carry


@handler(UpdateFeaturesRequest, min_version=0, max_version=2)
async def update_features(ctx: RequestContext, req: UpdateFeaturesRequest) -> UpdateFeaturesResponse:
    state = ctx.broker
    if authz.cluster_error(ctx, authz.Op.ALTER):
        return UpdateFeaturesResponse(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                      error_message="Cluster authorization failed.", results=[])
    levels = state.features
    atomic = config_release(state.config.emulate_kafka) != "3.9"
    results, changes = [], {}
    work = Slices()   # a request may carry a great many updates
    for u in req.feature_updates:
        if work.due():
            await work.pause()
        if len(u.feature.encode()) > MAX_NAME:   # could not be echoed in a result (Kafka could not either)
            return UpdateFeaturesResponse(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST,
                                          error_message="Feature name too long", results=[])
        kind = u.upgrade_type if ctx.version >= 1 else UPGRADE   # v0's AllowDowngrade is not read (below)
        why = levels.check(u.feature, u.max_version_level, kind)
        if why is not None and atomic:   # Kafka 4.x: the first failure fails the request, nothing applied
            return UpdateFeaturesResponse(   # QuorumController.updateFeatures' wording
                throttle_time_ms=0, error_code=ErrorCode.INVALID_UPDATE_VERSION, results=[],
                error_message=f"The update failed for all features since the following feature had an error: {why}")
        if why is None:
            changes[u.feature] = u.max_version_level
            # Kafka 4.x echoes the error's message (NONE's is its name); 3.9 sets none
            results.append(_Result(feature=u.feature, error_code=ErrorCode.NONE,
                                   error_message="NONE" if atomic else None))
        else:
            results.append(_Result(feature=u.feature, error_code=ErrorCode.INVALID_UPDATE_VERSION, error_message=why))
    if changes and not (ctx.version >= 1 and req.validate_only):
        await levels.apply(changes)
        elr_configs.ensure_cluster_min_isr(state)   # ELR turned on: the cluster-level min ISR it relies on
    return UpdateFeaturesResponse(throttle_time_ms=0, error_code=ErrorCode.NONE, error_message=None,
                                  results=results if ctx.version < 2 else [])
