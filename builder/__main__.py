from builder.cli.episodes import run

run()
