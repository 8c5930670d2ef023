# mk/fuzz.mk - the libFuzzer harnesses (fuzz/, docs/testing.md), built with
# clang and address+undefined sanitizers against a library built the same
# way in $(FUZZ_BUILD).  `make fuzz` runs each for FUZZ_SECONDS on a work
# copy of its committed seeds (fuzz/corpus/NAME); a crash stops make and
# leaves the input in $(FUZZ_BUILD)/artifacts/.  FUZZ_RUNS=N runs each
# harness on N inputs instead (a quick smoke test).
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?=
FUZZ_BUILD ?= build-fuzz
FUZZ_CC ?= clang
FUZZ_NAMES := $(patsubst fuzz/fuzz_%.c,%,$(wildcard fuzz/fuzz_*.c))
FUZZ_BINS := $(FUZZ_NAMES:%=$(FUZZ_BUILD)/fuzz/fuzz_%)
# -Wno-pass-failed: the reduction loops ask for vectorization, which the
# sanitizers' instrumentation defeats; that is expected here.
FUZZ_LIB_SAN := -fsanitize=fuzzer-no-link,address,undefined \
                -fno-sanitize-recover=undefined -fno-omit-frame-pointer \
                -Wno-pass-failed
.PHONY: fuzz fuzz-build
fuzz-build: deps
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) IB=0 ASAN= TSAN= \
	  FUZZ_SAN="$(FUZZ_LIB_SAN)" $(FUZZ_BUILD)/lib/libweft.a
	$(MAKE) BUILD=$(FUZZ_BUILD) FUZZ_CC=$(FUZZ_CC) IB=0 $(FUZZ_BINS)

$(FUZZ_BUILD)/fuzz/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz_quiet.h $(FUZZ_BUILD)/lib/libweft.a
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) -O1 -g -std=c11 -Wall -Wextra -Werror -pthread \
	  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	  $< $(FUZZ_BUILD)/lib/libweft.a -o $@ $(LDLIBS)

fuzz: fuzz-build
	@for n in $(FUZZ_NAMES); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$n $(FUZZ_BUILD)/artifacts; \
	  echo "fuzz_$$n: $(if $(FUZZ_RUNS),$(FUZZ_RUNS) runs,$(FUZZ_SECONDS) s)"; \
	  ASAN_OPTIONS=detect_leaks=1 $(FUZZ_BUILD)/fuzz/fuzz_$$n \
	    $(if $(FUZZ_RUNS),-runs=$(FUZZ_RUNS),-max_total_time=$(FUZZ_SECONDS)) \
	    -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$n- \
	    $(FUZZ_BUILD)/corpus/$$n fuzz/corpus/$$n \
	    > $(FUZZ_BUILD)/fuzz_$$n.log 2>&1 \
	  || { tail -60 $(FUZZ_BUILD)/fuzz_$$n.log; exit 1; }; \
	  grep -E "stat::number_of_executed_units|stat::new_units_added" \
	    $(FUZZ_BUILD)/fuzz_$$n.log; \
	done
