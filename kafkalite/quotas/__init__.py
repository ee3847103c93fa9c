"""Client quotas (Kafka's producer_byte_rate, consumer_byte_rate, request_percentage,
controller_mutation_rate): configuration in :mod:`.store`, measurement in :mod:`.rate`, enforcement in
:mod:`.manager`, the DescribeClientQuotas / AlterClientQuotas APIs in :mod:`.apis`."""
from __future__ import annotations

from kafkalite.quotas.manager import QuotaManager, from_config

__all__ = ["QuotaManager", "from_config"]
