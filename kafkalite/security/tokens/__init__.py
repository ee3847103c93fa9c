"""Who may stand in for whom? Delegation tokens (KIP-48, KIP-373), as Kafka 4.4 serves them.

A token is an id, an owner, the principal that requested it, renewers and three times (issue, expiry, max);
its password is the HMAC-SHA512 of the id keyed with ``delegation.token.secret.key`` (without the key the
feature is off: DELEGATION_TOKEN_AUTH_DISABLED). ``manager.TokenManager`` holds the tokens, applies Kafka's
create/renew/expire/describe rules (DelegationTokenControlManager, KafkaApis' broker-side checks), persists them
in the metadata room (one per room: every broker of a cluster shares them) and gives SCRAM (``tokenauth=true``)
the credential of a token id.
"""

#: the tokens' file in the metadata room (named here, so a broker without tokens imports nothing more)
FILE_NAME = "kafkalite-delegation-tokens.json"
