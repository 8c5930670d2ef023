"""What every worker process uses: its rank and a report of named checks.

    rep = Report()
    with rep:                         # saves rank<r>.json even on a crash
        rep.check("name", cond, "detail when it fails")
        with rep.case("allreduce float32"):   # an exception fails the case
            ...
"""
import json
import os
import traceback

RANK = int(os.environ.get("RANK", "0"))
WORLD = int(os.environ.get("WORLD_SIZE", "1"))


class Report:
    def __init__(self):
        self.checks = []
        self.data = {}
        self._case = None

    def check(self, name, ok, detail=""):
        if self._case:
            name = "%s: %s" % (self._case, name)
        self.checks.append({"name": name, "ok": bool(ok),
                            "detail": "" if ok else str(detail)})
        return ok

    def case(self, name):
        return _Case(self, name)

    def __enter__(self):
        return self

    def __exit__(self, typ, val, tb):
        if typ is not None and not issubclass(typ, SystemExit):
            self.check("worker", False, "".join(
                traceback.format_exception(typ, val, tb)))
        self.save()
        return False

    def save(self):
        d = os.environ.get("WEFTPY_RESULT_DIR")
        if not d:
            return
        tmp = os.path.join(d, ".rank%d.json" % RANK)
        with open(tmp, "w") as f:
            json.dump({"rank": RANK, "checks": self.checks,
                       "data": self.data}, f)
        os.replace(tmp, os.path.join(d, "rank%d.json" % RANK))


class _Case:
    def __init__(self, rep, name):
        self.rep, self.name = rep, name

    def __enter__(self):
        self.rep._case = self.name
        return self.rep

    def __exit__(self, typ, val, tb):
        self.rep._case = None
        if typ is None:
            self.rep.check(self.name, True)
        else:
            self.rep.check(self.name, False, "".join(
                traceback.format_exception_only(typ, val)).strip())
        return True  # one failed case does not stop the others
