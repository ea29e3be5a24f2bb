"""The commands of ``nord``, one module each: its flags and what it does.

    from nord.app.commands import run
    run.register(commands)   # nord.app.cli: adds `nord run` to the parser's subcommands

Each command imports the rest of nord inside the functions that need it, so that
`nord --help`, `nord list` and a refused flag answer without loading torch.
"""
