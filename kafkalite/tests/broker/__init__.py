"""An embedded broker in this process over real sockets, driven by the raw codec client."""
