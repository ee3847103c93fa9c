"""The start-time shortcut of kafkalite.metadata.elr_configs agrees with the feature tables it avoids importing."""
from __future__ import annotations

from kafkalite.metadata import elr_configs, features


def test_elr_default_profiles_match_the_feature_tables() -> None:
    finalized = {p for p in features.FEATURES if p is not None and any(
        f.name == elr_configs.ELR_FEATURE and f.finalized >= 1 for f in features.features_for(p))}
    assert finalized == elr_configs.ELR_BY_DEFAULT
    assert not any(f.name == elr_configs.ELR_FEATURE and f.finalized for f in features.features_for(None))
    assert elr_configs.FEATURES_FILE == features.FEATURES_FILE
