"""One module per group of subcommands; each has `register(subparsers)`."""
