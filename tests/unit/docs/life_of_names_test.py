"""docs/life-of-a-trainingjob.md against the tree: every path in backticks exists, every C++ name
in backticks (a CamelCase name, alone or qualified: `ComputePlan`, `GangScheduler::RunCycle`) is
declared or defined in operator/, launcher/, protocol/ or common/, and the precedence table lists
the claiming steps of operator/controller/plan.cc's table (PlanSteps) in their order, each with
its file. The page writes conditions, states and reasons with their field (`state: Running`), so
a lone CamelCase word is always a C++ name. CheckerTest shows that each check can fail."""
import os
import re
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
PAGE = os.path.join(ROOT, "docs", "life-of-a-trainingjob.md")
PLAN = os.path.join(ROOT, "operator", "controller", "plan.cc")
CODE_DIRS = ("operator", "launcher", "protocol", "common")
PATH_ROOTS = ("operator/", "launcher/", "protocol/", "common/", "crds/", "examples/", "docs/",
              "tests/", "helm/", "hack/", "sdk/")
NAME = re.compile(r"[A-Z][A-Za-z0-9]*(?:::[A-Z][A-Za-z0-9]*)*")
PRECEDENCE_ROW = re.compile(r"^\| *(\d+) *\| *`(\w+)` *\|.*\| *`([^`]+)` *\|\s*$")
STEP_ROW = re.compile(
    r'Claim\(\{"(\w+)",\s*k\w+,\s*(kPlan|"[^"]*"),\s*"((?:[^"\\]|\\.)*)"\},\s*step::\w+\)')


def spans(page):
    return re.findall(r"`([^`\n]+)`", page)


def is_path(span):
    return span.startswith(PATH_ROOTS) and re.fullmatch(r"[\w./-]+", span) is not None


def is_name(span):
    return NAME.fullmatch(span) is not None and any(c.islower() for c in span)


def code_text(root):
    """Every header and source under CODE_DIRS, line comments removed, as one string."""
    parts = []
    for top in CODE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith((".h", ".cc")):
                    with open(os.path.join(dirpath, f), encoding="utf-8", errors="replace") as fh:
                        parts.append(re.sub(r"//[^\n]*", "", fh.read()))
    return "\n".join(parts)


def name_exists(name, code):
    if "::" in name:
        return re.search(r"\b" + re.escape(name) + r"\s*\(", code) is not None
    return re.search(r"\b" + name + r"\s*\(", code) is not None or re.search(
        r"\b(?:class|struct|enum class|enum)\s+" + name + r"\b", code) is not None


def plan_steps(plan_source):
    """(name, owner) of each claiming step (a Claim row) of plan.cc's table, in order."""
    table = plan_source[plan_source.index("const Step kSteps[] = {"):]
    table = table[:table.index("\n};")]
    out = []
    for name, owner, _ in STEP_ROW.findall(table):
        out.append((name, "operator/controller/plan.cc" if owner == "kPlan" else owner.strip('"')))
    return out


def precedence(page):
    return [(m.group(2), m.group(3)) for m in map(PRECEDENCE_ROW.match, page.splitlines()) if m]


def problems(page, root, code, steps):
    found = []
    for span in spans(page):
        if is_path(span) and not os.path.exists(os.path.join(root, span)):
            found.append("no such path: " + span)
        elif is_name(span) and not name_exists(span, code):
            found.append("no such C++ name: " + span)
    if not steps:
        found.append("no claiming step found in operator/controller/plan.cc's table")
    if precedence(page) != steps:
        found.append("the precedence table is not plan.cc's:\n  page: %s\n  code: %s"
                     % (precedence(page), steps))
    return found


class LifeOfPageTest(unittest.TestCase):
    def test_every_name_on_the_page_exists_and_the_precedence_is_the_code_s(self):
        with open(PAGE, encoding="utf-8") as f:
            page = f.read()
        with open(PLAN, encoding="utf-8") as f:
            steps = plan_steps(f.read())
        self.assertEqual(problems(page, ROOT, code_text(ROOT), steps), [])

    def test_the_page_names_files_and_functions_at_all(self):
        with open(PAGE, encoding="utf-8") as f:
            page = f.read()
        self.assertGreater(sum(map(is_path, spans(page))), 40)
        self.assertGreater(sum(map(is_name, spans(page))), 40)


class CheckerTest(unittest.TestCase):
    CODE = ("class GangScheduler {};\nvoid GangScheduler::RunCycle() {}\nPlan ComputePlan(int);\n"
            "bool Deleting(Pass&);\nbool Progress(Pass&);")
    STEPS = [("Deleting", "operator/controller/plan.cc"), ("Progress", "operator/api/children.cc")]
    GOOD = ("`ComputePlan` `GangScheduler` `GangScheduler::RunCycle` `state: Running` "
            "`docs/life-of-a-trainingjob.md` `LOCKSTEP_MAX_RESTARTS`\n"
            "| 1 | `Deleting` | when | `operator/controller/plan.cc` |\n"
            "| 2 | `Progress` | always | `operator/api/children.cc` |\n")

    def check(self, page):
        return problems(page, ROOT, self.CODE, self.STEPS)

    def test_a_correct_page_passes(self):
        self.assertEqual(self.check(self.GOOD), [])

    def test_a_wrong_path_fails(self):
        self.assertEqual(self.check(self.GOOD + "`operator/controller/no_such_step.cc`"),
                         ["no such path: operator/controller/no_such_step.cc"])

    def test_a_wrong_name_fails(self):
        self.assertEqual(self.check(self.GOOD + "`ComputePlans` `GangScheduler::RunCycles`"),
                         ["no such C++ name: ComputePlans",
                          "no such C++ name: GangScheduler::RunCycles"])

    def test_a_name_only_in_a_comment_fails(self):
        code = re.sub(r"//[^\n]*", "", self.CODE + "\n// OnlyMentioned() here")
        self.assertEqual(problems(self.GOOD + "`OnlyMentioned`", ROOT, code, self.STEPS),
                         ["no such C++ name: OnlyMentioned"])

    def test_a_reordered_or_missing_step_fails(self):
        swapped = self.GOOD.replace("`Deleting`", "`X`").replace("`Progress`", "`Deleting`")
        swapped = swapped.replace("`X`", "`Progress`")
        self.assertEqual(len(self.check(swapped)), 1)
        missing = "\n".join(l for l in self.GOOD.splitlines() if "`Progress`" not in l)
        self.assertEqual(len(self.check(missing)), 1)

    def test_the_step_table_parser_reads_plan_cc_s_rows(self):
        source = ('const Step kSteps[] = {\n'
                  '    Claim({"Deleting", kGate, kPlan, "metadata.deletionTimestamp is set"}, '
                  'step::Deleting),\n'
                  '    Record("Identity", kGate, kPlan, step::Identity),\n'
                  '    Claim({"InvalidSpec", kGate, "operator/api/validation.cc",\n'
                  '           "the spec is invalid (Stalled)"},\n'
                  '          step::InvalidSpec),\n};\n')
        self.assertEqual(plan_steps(source), [("Deleting", "operator/controller/plan.cc"),
                                              ("InvalidSpec", "operator/api/validation.cc")])


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False, verbosity=2).result.wasSuccessful() else 1)
