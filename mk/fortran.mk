# mk/fortran.mk - the Fortran module (fortran/, docs/fortran.md) and its
# test program, built with gfortran when it is found (GFORTRAN= leaves them
# out; GFORTRAN=path picks another).  `make fortran` builds:
#   $(BUILD)/fortran/weft.mod              the module users `use weft` from
#   $(BUILD)/fortran/libweft_fortran.a     its object, to link with -lweft
#   $(BUILD)/fortran/test_weft_f           test/fortran/'s program, run by
#                                          tools_fortran_* under weftrun
# `make test` builds them too (FORTRAN_BUILD), so CI proves the module
# compiles against the header's signatures and works from Fortran; where
# gfortran is absent FORTRAN_BUILD is empty and the test says why it skips.
GFORTRAN ?= $(shell command -v gfortran 2>/dev/null)
FORTRAN_DIR := $(BUILD)/fortran
FORTRAN_MOD := $(FORTRAN_DIR)/weft.mod
FORTRAN_LIB := $(FORTRAN_DIR)/libweft_fortran.a
FORTRAN_TEST := $(FORTRAN_DIR)/test_weft_f
FORTRAN_BUILD := $(if $(GFORTRAN),$(FORTRAN_TEST))
# -cpp: the typed procedures are one template included per type
# (fortran/weft_typed.inc).  No line-length limit: a line grows when the
# preprocessor substitutes a type name.  $(SAN): an ASAN or TSAN build's
# libweft.so needs its runtime in the program too.
FFLAGS_WEFT := -cpp $(OPT) -g -std=f2018 -Wall -Wextra -Werror \
               -ffree-line-length-none -fPIC $(SAN)

# The object and the module file come from one compile (-J puts weft.mod
# in FORTRAN_DIR); both are remade when either is missing.  gfortran
# leaves a .mod whose content did not change as it was, old: the touch
# keeps it from looking out of date forever.
$(FORTRAN_DIR)/weft.o $(FORTRAN_MOD) &: fortran/weft.F90 fortran/weft_typed.inc
	@mkdir -p $(FORTRAN_DIR)
	$(GFORTRAN) $(FFLAGS_WEFT) -Ifortran -J$(FORTRAN_DIR) -c $< \
	  -o $(FORTRAN_DIR)/weft.o
	@touch $(FORTRAN_MOD)
$(FORTRAN_LIB): $(FORTRAN_DIR)/weft.o
	rm -f $@ && ar rcs $@ $^

# The test compares floats for exact equality on purpose (every value is a
# small integer): -Wno-compare-reals.  The checks module's files go to a
# folder of their own, away from weft.mod.
$(FORTRAN_TEST): test/fortran/test_weft_f.F90 $(wildcard test/fortran/*.inc) \
		$(FORTRAN_LIB) $(FORTRAN_MOD) $(BUILD)/lib/libweft.so
	@mkdir -p $(FORTRAN_DIR)/test-mod
	$(GFORTRAN) $(FFLAGS_WEFT) -Wno-compare-reals -Itest/fortran \
	  -I$(FORTRAN_DIR) -J$(FORTRAN_DIR)/test-mod $< $(FORTRAN_LIB) \
	  -L$(BUILD)/lib -lweft -Wl,-rpath,'$$ORIGIN/../lib' $(LDFLAGS) -o $@

# The library itself first, as `make test` builds it: the program links it.
.PHONY: fortran
fortran: lib
	@$(if $(GFORTRAN),$(MAKE) --no-print-directory $(FORTRAN_BUILD),\
	  echo "gfortran not found: the Fortran module is not built (apt-get install gfortran)"; exit 1)
