"""Reading runs from outside: events and followers, observability, codecs, telemetry,
the public API."""
