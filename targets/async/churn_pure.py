# churn_pure.py — churn_tasks.py on asyncio's pure-Python implementation
# (tests/async/test_async_churn.py): asyncio's C module is kept from being
# imported, then churn_tasks.py beside this file runs as the program, its
# lines unchanged (the churn checks judge the lines of its frames).
import os
import runpy
import sys

sys.modules["_asyncio"] = None   # asyncio falls back on its pure-Python implementation
runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "churn_tasks.py"), run_name="__main__")
