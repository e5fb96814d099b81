# Parked while modules are being imported: a generated module that parks at
# import time (frames of <frozen importlib._bootstrap> appear below it), a
# chain where one generated module imports another that parks, and
# importlib.import_module.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt
import importlib

fpgt.start("import_time")
sys.dont_write_bytecode = True

modules = {
    "fp_import_leaf": "import fpgt\n\ndef f():\n    fpgt.park('import-leaf')\n\nf()\n",
    "fp_import_top": "import fpgt\nimport fp_import_middle\n",
    "fp_import_middle": "import fpgt\nfpgt.park('import-chain')\n",
    "fp_import_dynamic": "import fpgt\nfpgt.park('import_module')\n",
}
sys.path.insert(0, fpgt.generated_files(
    {name + ".py": src for name, src in modules.items()}))

import fp_import_leaf
import fp_import_top


def dynamic():
    return importlib.import_module("fp_import_dynamic")


dynamic()
fpgt.done()
