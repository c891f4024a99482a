"""Settings of the live server in test_registry_login.py: the embedded default's, with a password
hasher that takes a known time of one shared CPU and logs each hash.

The simulated CPU is a file lock held for ``COST`` seconds by every hash, in every process of the
server: hashes run one after another, as real ones do on a machine whose cores are busy, whatever
this machine's speed (a real PBKDF2 costs about 0.4 s of CPU on these machines). Each hash appends
its start and end times (``time.time()``) to the file ``LOGIN_HASH_LOG`` names.
"""

import fcntl
import os
import time

from django.contrib.auth.hashers import PBKDF2PasswordHasher

from registry.settings.base import *  # noqa: F403

COST = 0.5


class LoggedSlowHasher(PBKDF2PasswordHasher):
    """PBKDF2 (few iterations: the cost is the lock's) with COST seconds of the one CPU."""

    iterations = 1000

    def encode(self, password, salt, iterations=None):
        # verify() encodes too: this counts every hash once, of a known user or of none.
        log = os.environ["LOGIN_HASH_LOG"]
        start = time.time()
        with open(log + ".cpu", "a") as cpu:
            fcntl.flock(cpu, fcntl.LOCK_EX)
            try:
                time.sleep(COST)
                encoded = super().encode(password, salt, iterations)
            finally:
                fcntl.flock(cpu, fcntl.LOCK_UN)
        with open(log, "a") as out:
            out.write(f"{start} {time.time()}\n")
        return encoded


PASSWORD_HASHERS = ["tests.hostile.login_server.LoggedSlowHasher"]
