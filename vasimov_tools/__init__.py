"""The tools on top of every package: the `vasimov` CLI and supervisor, the launch-file reader, the recorder and bag
tools, graph introspection, the walking benches and the reference closed loop. Nothing below imports this package."""
