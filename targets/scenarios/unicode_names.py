# Non-ASCII identifiers and file names of every PEP 393 kind: latin-1
# (café), BMP (函数, Ωmega) and astral (𠀋 survives NFKC normalisation; code
# objects renamed to 𝔣𝔲𝔫𝔠 with code.replace).  Generated module files named
# café.py, 模块_Ωmega.py and 𝔪𝔬𝔡𝔲𝔩𝔢_𝔣𝔦𝔩𝔢.py are executed from a
# scratch directory, so those names are real co_filename values.
import sys, os; sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'groundtruth'))
import fpgt

fpgt.start("unicode_names")


def café(label):
    fpgt.park(label)


def 函数(label):
    café(label)


def Ωmega(label):
    函数(label)


def 𠀋(label):
    Ωmega(label)


class Ünïcödé:
    def méthode(self, label):
        𠀋(label)


Ünïcödé().méthode("identifiers")


def astral_renamed(label):
    fpgt.park(label)


astral_renamed.__code__ = astral_renamed.__code__.replace(
    co_name="\U0001d523\U0001d532\U0001d52b\U0001d520",
    co_qualname="\U0001d52c\U0001d524\U0001d531.\U0001d523\U0001d532\U0001d52b\U0001d520")
astral_renamed("code.replace-astral")

MODULE = '''
def entry(label, inner=None):
    def nested_{tag}():
        if inner is None:
            fpgt.park(label)
        else:
            inner(label)
    nested_{tag}()
'''
files = [("caf\u00e9.py", "latin1"),
         ("\u6a21\u5757_\u03a9mega.py", "bmp"),
         ("\U0001d52a\U0001d52c\U0001d521\U0001d532\U0001d529\U0001d522_\U0001d523\U0001d526\U0001d529\U0001d522.py", "astral")]
entries = []
for fname, tag in files:
    path = fpgt.generated_file(os.path.join("unicode_names", fname),
                               MODULE.format(tag=tag))
    with open(path, encoding="utf-8") as f:
        code = compile(f.read(), path, "exec")
    module_ns = {"fpgt": fpgt}
    exec(code, module_ns)
    entries.append(module_ns["entry"])

for entry in entries:
    entry("file-" + entry.__code__.co_filename.rsplit(os.sep, 1)[-1])
entries[2]("all-files", lambda label: entries[1](label, lambda l2: entries[0](l2)))
fpgt.done()
