"""The daemon's network side: the websockets server, handshake, per-connection fan-out,
the engine job scheduler and stats."""
