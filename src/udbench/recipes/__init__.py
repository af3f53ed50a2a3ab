"""udbench.recipes: whole jobs end to end (generate, run, leaderboard, report), above every
other layer but the command line (see ``udbench._layers``)."""
