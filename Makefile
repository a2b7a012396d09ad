PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: demo test controlplane cluster lint bench experiment-itp experiment-openb experiment-colocation experiment-aryl clean

# The modules berth/native.py lists are compiled by the install (mypyc, setup.py), so an edit
# of one builds again. An editable install leaves the rest without bytecode: where
# PYTHONDONTWRITEBYTECODE is set, every command would compile it again (about 0.2 s), so it is
# compiled here once. The install writes the compiled modules beside their sources; those of an
# earlier build go first, so that a module taken out of the group is not shadowed by its old
# compiled one (Python prefers it to the source).
COMPILED := $(shell $(PYTHON) berth/native.py)
# Removes the compiled modules of a build: the group and each module's own.
DROP_COMPILED := rm -f *__mypyc*.so && find berth -name "*.so" -delete

$(BIN)/berth: pyproject.toml setup.py berth/native.py $(COMPILED)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(DROP_COMPILED)
	$(BIN)/pip install --quiet -e '.[dev]'
	$(BIN)/python -m compileall -q berth
	touch $(BIN)/berth

demo: $(BIN)/berth
	$(BIN)/berth simulate --out out/demo

# Ray is optional for users (pip install 'berth[ray]'); the tests start a Ray cluster. Only the
# extra's requirements, as the installed berth lists them: installing '.[ray]' would build the
# compiled group a second time.
RAY_EXTRA := from importlib.metadata import requires; \
	print(*(r.split(";")[0] for r in requires("berth") if r.endswith("extra == \"ray\"")))
$(VENV)/.ray: $(BIN)/berth
	$(BIN)/pip install --quiet $$($(BIN)/python -c '$(RAY_EXTRA)')
	touch $@

test: $(BIN)/berth $(VENV)/.ray
	@if command -v go >/dev/null || [ -x /usr/local/go/bin/go ]; then controlplane/build.sh; \
	else echo "no Go toolchain: the tests on a real control plane will skip"; fi
	$(BIN)/python -m pytest

# etcd, kube-apiserver, kube-controller-manager and kube-scheduler from their Go modules
# (controlplane/go.mod pins the release) into build/controlplane/bin; a warm build does nothing
controlplane:
	controlplane/build.sh

# a throwaway control plane on loopback with deploy/ applied, until Ctrl-C
cluster: $(BIN)/berth controlplane
	$(BIN)/python -m tests.k8s.controlplane

lint: $(BIN)/berth
	$(BIN)/ruff check berth tests benchmarks

bench: $(BIN)/berth
	$(BIN)/python benchmarks/throughput.py

# The experiments read the developers' trace copies in ../shared/traces when they are there,
# else the public traces by name from berth's cache, downloading them on the first run
# (berth trace get --list; BERTH_CACHE, BERTH_TRACE_MIRROR: docs/traces.md).

# docs/experiments/itp-queues.md: three scheduler configurations on ITP clusters 03 and 06
experiment-itp: $(BIN)/berth
	$(BIN)/python docs/experiments/itp-queues/run.py

# docs/experiments/openb-fragmentation.md: fill until full, every policy, ten seeds, every pod list
experiment-openb: $(BIN)/berth
	$(BIN)/python docs/experiments/openb-fragmentation/run.py

# docs/experiments/colocation.md: online services and Alibaba 2017 batch, three ways (about 2 min)
experiment-colocation: $(BIN)/berth
	$(BIN)/python docs/experiments/colocation/run.py

# docs/experiments/aryl.md: loaning and elastic jobs (edl, aryl) on ITP clusters 03, 04 and 06
experiment-aryl: $(BIN)/berth
	$(BIN)/python docs/experiments/aryl/run.py

clean:
	rm -rf $(VENV) out build *.egg-info
	$(DROP_COMPILED)
