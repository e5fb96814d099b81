# Code run by exec() and eval(): functions defined by exec (file
# "<string>"), an eval'd expression (a "<module>" code object on the
# stack), compile() with a custom file name, exec with separate locals
# inside a function, and nested exec.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("exec_eval")
g = {"fpgt": fpgt}
exec("def made_by_exec():\n    fpgt.park('exec-defined')\n\nmade_by_exec()\n", g)
eval("fpgt.park('eval')", g)
exec(compile("fpgt.park('compiled-module')", "custom/compiled_name.py", "exec"), g)


def exec_in_function():
    loc = {}
    exec("def f():\n    fpgt.park('exec-locals')\nf()\n", g, loc)


exec_in_function()
g["INNER"] = "eval(\"fpgt.park('nested-exec')\")"
exec("exec(INNER)", g)
fpgt.done()
