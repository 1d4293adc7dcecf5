"""Test-session defaults: the same code paths whatever the user's code cache holds, and no
background processes left behind.

- ``CADMOTION_DYNAMICS_FAST=compile``: dynamics runs on the compiled right-hand side when numba
  is installed, compiling it in the process if it is not cached (a user's run would start on
  numpy and leave the compiling to the background warm-up, which tests/kernel/test_code_cache.py
  checks in processes of its own);
- ``CADMOTION_WARMUP=0``: no background warm-up started when the test process exits.
"""

import os

os.environ.setdefault("CADMOTION_DYNAMICS_FAST", "compile")
os.environ.setdefault("CADMOTION_WARMUP", "0")
