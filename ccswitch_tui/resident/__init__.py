"""The resident launcher (``ccs resident on``): a ccs process of the user's that has the launch path
imported and starts a worker (a fork of itself) for each `ccs launch`, `ccs run` or shim launch.

Python's start and ccs's imports are most of what a launch costs, and the resident pays them once.
The launch itself still happens in the process the user started (the *client*, ``client.py``):
the worker does the launch's work in the client's environment, folder, umask and standard streams
(passed over the socket), then hands back the child to start; the client starts it in its own
process group on the user's terminal, forwards signals, reports its status, and exits with the
worker's answer. So the child is the client's child, in the user's session, as without the
resident. Layout, under ccs's state folder::

    resident/        0700, the user's
        on           there when the user turned it on (``ccs resident on``)
        sock         the socket; the resident answers only its own user (SO_PEERCRED)
        lock         held by the running resident (one per state folder)

Anything unexpected (a folder of another user's or open to others, a peer of another uid, another
ccs installation, a different mount, pid or network namespace, a recorded launch whose bridge guard
must run in the child) makes the client run the launch itself, as it would without the resident.
The resident exits after ``IDLE`` seconds without a request, when its code changed on disk (a new
version installed), or when its socket or the ``on`` file is gone.
"""
