"""The application: the ``nord`` command, run configuration and config files, data commands and
the terminal progress display. Library code never imports from here."""
