from builder.cli.leave import run

run()
