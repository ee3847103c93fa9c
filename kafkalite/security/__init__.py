"""Who is on the other end of a connection: listeners' security protocols, TLS, SASL and the principal.

The seam the rest of the broker sees is :class:`kafkalite.security.principal.KafkaPrincipal`: every
:class:`kafkalite.handlers.registry.RequestContext` carries the principal its connection authenticated as
(``User:ANONYMOUS`` on a PLAINTEXT listener) and the listener's security protocol. Authorization
(``kafkalite.authz``) and quotas read them from there; they never look at sockets or SASL state.
"""
