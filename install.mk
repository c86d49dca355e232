# make install / make uninstall (PREFIX, default /usr/local; DESTDIR honoured):
#   $(PREFIX)/bin/memprof-bpf                  the loader
#   $(PREFIX)/lib/libmemprof-preload.so        the malloc host (the loader looks
#                                              for it next to itself or in ../lib)
#   $(PREFIX)/lib/libmemprof-ocaml4-attach.so  the injectable OCaml hosts, found alike
#   (and libmemprof-ocaml5-attach.so, when OCaml 5.3 was built: make ocaml5)
#   $(PREFIX)/lib/libmemprof-python.so         the Python host (the same way)
#   $(PREFIX)/lib/libmemprof.{a,so}            the core, for runtime authors
#   $(PREFIX)/include/memprof*.h               its public headers
#   $(PREFIX)/lib/pkgconfig/memprof.pc         pkg-config --cflags --libs memprof
#   $(PREFIX)/share/man/man1/memprof-bpf.1     the man page
#   $(OCAML_DESTDIR)/memprof_probe/            the OCaml host's findlib package, where
#                                              findlib installs and looks (ocamlfind
#                                              printconf destdir; else $(PREFIX)/lib/ocaml)
# Nothing is built as part of the install: build first (make), then install.

PREFIX ?= /usr/local
DESTDIR ?=
INSTALL ?= install

INSTALL_BIN := $(DESTDIR)$(PREFIX)/bin
INSTALL_LIB := $(DESTDIR)$(PREFIX)/lib
INSTALL_INC := $(DESTDIR)$(PREFIX)/include
INSTALL_MAN1 := $(DESTDIR)$(PREFIX)/share/man/man1
OCAML_DESTDIR ?= $(or $(shell $(OCAMLFIND) printconf destdir 2>/dev/null),$(PREFIX)/lib/ocaml)
INSTALL_OCAML := $(DESTDIR)$(OCAML_DESTDIR)/memprof_probe
# The core's headers (rt.h belongs to the reference runtime, not installed).
INSTALL_HDRS := $(filter-out runtime-probes/include/rt.h,$(PUBLIC_HDRS))
INSTALL_LIBS := $(PRELOAD_SO) $(PYHOST_SO) $(BUILD)/libmemprof.a $(BUILD)/libmemprof.so
INSTALL_OCAML_HOSTS := $(OCAML_ATTACH4_SO) $(wildcard $(OCAML_ATTACH5_SO))
INSTALL_FILES := $(LOADER) $(INSTALL_LIBS) $(INSTALL_OCAML_HOSTS) $(INSTALL_HDRS) \
	docs/memprof-bpf.1 $(OCAML_PKG_FILES)

.PHONY: install uninstall install-ocaml-package
# The findlib package alone (memprof_probe.opam: OCAML_DESTDIR=%{lib}%).
install-ocaml-package: $(OCAML_PKG_FILES)
	$(INSTALL) -d $(INSTALL_OCAML)
	$(INSTALL) -m 644 $(OCAML_PKG_FILES) $(INSTALL_OCAML)/

install: $(INSTALL_FILES)
	$(INSTALL) -d $(INSTALL_BIN) $(INSTALL_LIB)/pkgconfig $(INSTALL_INC) $(INSTALL_MAN1) \
		$(INSTALL_OCAML)
	$(INSTALL) -m 755 $(LOADER) $(INSTALL_BIN)/memprof-bpf
	$(INSTALL) -m 755 $(PRELOAD_SO) $(PYHOST_SO) $(BUILD)/libmemprof.so $(INSTALL_OCAML_HOSTS) \
		$(INSTALL_LIB)/
	$(INSTALL) -m 644 $(BUILD)/libmemprof.a $(INSTALL_LIB)/
	$(INSTALL) -m 644 $(INSTALL_HDRS) $(INSTALL_INC)/
	$(INSTALL) -m 644 docs/memprof-bpf.1 $(INSTALL_MAN1)/
	$(INSTALL) -m 644 $(OCAML_PKG_FILES) $(INSTALL_OCAML)/
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$${prefix}/lib' 'includedir=$${prefix}/include' '' \
		'Name: memprof' \
		'Description: statistical memory profiling core (OCaml statmemprof in C) with USDT probes' \
		'Version: 0.1' 'Cflags: -I$${includedir}' 'Libs: -L$${libdir} -lmemprof' \
		'Libs.private: $(MEMPROF_LIBS)' > $(INSTALL_LIB)/pkgconfig/memprof.pc

uninstall:
	rm -f $(INSTALL_BIN)/memprof-bpf $(addprefix $(INSTALL_LIB)/,$(notdir $(INSTALL_LIBS))) \
		$(addprefix $(INSTALL_LIB)/,$(notdir $(OCAML_ATTACH4_SO) $(OCAML_ATTACH5_SO))) \
		$(addprefix $(INSTALL_INC)/,$(notdir $(INSTALL_HDRS))) \
		$(INSTALL_LIB)/pkgconfig/memprof.pc $(INSTALL_MAN1)/memprof-bpf.1 \
		$(addprefix $(INSTALL_OCAML)/,$(notdir $(OCAML_PKG_FILES)))
	-rmdir $(INSTALL_OCAML) 2>/dev/null
