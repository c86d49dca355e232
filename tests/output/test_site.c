/*
 * The allocation-site rule (userspace/output/site.c) on a table of frame
 * names, without a process: the kind of each name, the site of stacks
 * given by names (the unnamed frames next to a wrapper, as sqlite3 shows
 * them), --skip-frames, and the name forms --short-names and --lines
 * print.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "output/site.h"

struct kind_case {
	const char *name;
	enum site_kind kind;
};

static const struct kind_case kinds[] = {
    {"malloc", SITE_ALLOCATOR},
    {"__libc_malloc", SITE_ALLOCATOR},
    {"operator new(unsigned long)", SITE_ALLOCATOR},
    {"operator new[](unsigned long)", SITE_ALLOCATOR},
    {"operator delete(void*, unsigned long)", SITE_ALLOCATOR},
    /* Return types of function templates, of every shape. */
    {"double& std::vector<double, std::allocator<double> >::emplace_back<double>(double&&)",
     SITE_STDLIB},
    {"void std::vector<int, std::allocator<int> >::_M_realloc_insert<int>(__gnu_cxx::__normal_"
     "iterator<int*, std::vector<int, std::allocator<int> > >, int&&)",
     SITE_STDLIB},
    {"std::pair<std::_Rb_tree_iterator<std::pair<int const, int> >, bool> std::_Rb_tree<int, "
     "std::pair<int const, int>, std::_Select1st<std::pair<int const, int> >, std::less<int>, "
     "std::allocator<std::pair<int const, int> > >::_M_emplace_unique<int&, int>(int&, int&&)",
     SITE_STDLIB},
    {"char const* std::__find_if<char const*>(char const*, char const*)", SITE_STDLIB},
    {"std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> "
     ">::_M_create(unsigned long&, unsigned long)",
     SITE_STDLIB},
    {"__gnu_cxx::new_allocator<char>::allocate(unsigned long, void const*)", SITE_STDLIB},
    {"std::operator<< <std::char_traits<char> >(std::basic_ostream<char, std::char_traits<char> "
     ">&, char const*)",
     SITE_STDLIB},
    {"__cxa_allocate_exception", SITE_STDLIB},
    /* The program's, though std types are in their names. */
    {"app::fill(int)", SITE_PROGRAM},
    {"std::vector<long, std::allocator<long> > shop::make_series<long>(int)", SITE_PROGRAM},
    {"double& app::Grid<double>::at(int, int)", SITE_PROGRAM},
    {"app::Cache<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> "
     ">, std::vector<int, std::allocator<int> > >::put(int)",
     SITE_PROGRAM},
    {"app::Point::operator std::__cxx11::basic_string<char, std::char_traits<char>, "
     "std::allocator<char> >() const",
     SITE_PROGRAM},
    {"app::operator<<(std::ostream&, app::Point const&)", SITE_PROGRAM},
    {"(anonymous namespace)::helper(int)", SITE_PROGRAM},
    {"app::fill(int)::{lambda(int)#1}::operator()(int) const", SITE_PROGRAM},
    {"shop::build_report[abi:cxx11](int)", SITE_PROGRAM},
    {"Work.make_point", SITE_PROGRAM},
    {"my_malloc", SITE_PROGRAM},
    {"mallocx", SITE_PROGRAM},
    {"g_malloc_wrapper_of_mine", SITE_PROGRAM},
    {"libfoo.so+0x1234", SITE_PROGRAM},
    /* Wrappers and libraries. */
    {"g_malloc0", SITE_WRAPPER},
    {"xmalloc.constprop.0", SITE_WRAPPER},
    {"PyMem_RawMalloc", SITE_WRAPPER},
    {"llvm::safe_malloc(unsigned long)", SITE_WRAPPER},
    {"sqlite3Malloc", SITE_LIBRARY},
    {"sqlite3_prepare_v2", SITE_LIBRARY},
    {"libsqlite3.so.0.8.6+0xa7503", SITE_LIBRARY},
};

Test(site, kinds_of_frame_names)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		cr_expect_eq(site_frame_kind(kinds[i].name), kinds[i].kind,
			     "%s: kind %d, expected %d", kinds[i].name,
			     site_frame_kind(kinds[i].name), kinds[i].kind);
}

Test(site, qualified_name_past_the_return_type)
{
	cr_expect_str_eq(site_qualified_name("double& std::vector<double, std::allocator<double> "
					     ">::emplace_back<double>(double&&)"),
			 "std::vector<double, std::allocator<double> >::emplace_back<double>("
			 "double&&)");
	cr_expect_str_eq(site_qualified_name("operator new(unsigned long)"),
			 "operator new(unsigned long)");
	cr_expect_str_eq(site_qualified_name("app::fill(int)"), "app::fill(int)");
}

#define N(a) (sizeof(a) / sizeof(a[0]))

Test(site, sites_of_stacks_by_names)
{
	/* sqlite3 as a stripped Debian libsqlite3 shows it: the static
	 * sqlite3MemMalloc under the named sqlite3Malloc, dbMallocRawFinish
	 * above it, then the library's API. */
	const char *sqlite[] = {"libsqlite3.so.0.8.6+0xa7503",
				"sqlite3Malloc",
				"libsqlite3.so.0.8.6+0xa70f0",
				"sqlite3VdbeMemGrow",
				"libsqlite3.so.0.8.6+0xf284b",
				"sqlite3_step",
				"load_rows",
				"main"};
	/* A static helper under g_malloc, in GLib. */
	const char *glib[] = {"libglib-2.0.so.0+0x5a0f0", "g_malloc", "app_fill", "main"};
	/* A stripped program calling operator new: its frames are its own. */
	const char *stripped[] = {"operator new(unsigned long)", "prog+0x1234", "prog+0x1300",
				  "main"};
	const char *cxx[] = {"operator new(unsigned long)",
			     "void std::vector<double, std::allocator<double> "
			     ">::_M_realloc_insert<double>(double&&)",
			     "double& std::vector<double, std::allocator<double> "
			     ">::emplace_back<double>(double&&)",
			     "app::Table::add_row(int)", "main"};
	const char *all[] = {"malloc", "operator new(unsigned long)"};

	cr_expect_str_eq(site_of_names(sqlite, N(sqlite)), "load_rows");
	cr_expect_str_eq(site_of_names(glib, N(glib)), "app_fill");
	cr_expect_str_eq(site_of_names(stripped, N(stripped)), "prog+0x1234");
	cr_expect_str_eq(site_of_names(cxx, N(cxx)), "app::Table::add_row(int)");
	cr_expect_str_eq(site_of_names(all, N(all)), "malloc");
	cr_expect_str_eq(site_of_names(NULL, 0), "");
}

Test(site, modules_decide_for_unnamed_frames)
{
	/* Module 2 is libstdc++, 1 the stripped program. */
	const struct site_frame own[] = {{"operator new(unsigned long)", 2, 1},
					 {"libstdc++.so.6+0xa1b2", 2, 0},
					 {"app::f()", 1, 1}};
	const struct site_frame other[] = {
	    {"operator new(unsigned long)", 2, 1}, {"prog+0x1234", 1, 0}, {"main", 1, 1}};
	/* An unnamed helper of GLib under g_malloc, then the program's. */
	const struct site_frame under[] = {
	    {"libglib-2.0.so.0+0x5a0f0", 3, 0}, {"g_malloc", 3, 1}, {"prog+0x99", 1, 0}};

	cr_expect_eq(site_index(own, N(own)), 2);
	cr_expect_eq(site_index(other, N(other)), 1);
	cr_expect_eq(site_index(under, N(under)), 2);
}

Test(site, skip_frames_extends_the_rule)
{
	const char *cxx[] = {"operator new(unsigned long)", "app::Pool::grab(unsigned long)",
			     "app::Table::add_row(int)", "main"};
	const char *lib[] = {"libfoo.so.1+0x10", "libfoo.so.1+0x20", "app_main", "main"};
	char err[256], *drop;

	cr_expect_str_eq(site_of_names(cxx, N(cxx)), "app::Pool::grab(unsigned long)");
	cr_assert_eq(site_skip_add("app::Pool::.*", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(site_skip_add("libfoo\\.so.*", err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(site_of_names(cxx, N(cxx)), "app::Table::add_row(int)");
	cr_expect_str_eq(site_of_names(lib, N(lib)), "app_main");
	/* Matched whole, without the parameters. */
	cr_expect_eq(site_frame_kind("app::Pool::grab(unsigned long)"), SITE_SKIPPED);
	cr_expect_eq(site_frame_kind("my::app::Pool::grab(unsigned long)"), SITE_PROGRAM);
	/* ... and without the ABI tags that end the name. */
	cr_assert_eq(site_skip_add("inv::load_names", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(site_frame_kind("inv::load_names[abi:cxx11](int)"), SITE_SKIPPED);
	cr_expect_eq(site_frame_kind("inv::load_names[abi:cxx11][abi:v2]()"), SITE_SKIPPED);
	cr_expect_eq(site_frame_kind("inv::load_names[3](int)"), SITE_PROGRAM);
	drop = site_drop_frames();
	cr_assert(drop);
	cr_expect(strstr(drop, "|(?:app::Pool::.*)|(?:libfoo\\.so.*)|(?:inv::load_names)"), "%s",
		  drop);
	cr_expect(strstr(drop, "sqlite3"), "%s", drop);
	free(drop);
	cr_expect_neq(site_skip_add("app(", err, sizeof(err)), 0);
	cr_expect(strstr(err, "bad --skip-frames regex 'app('"), "%s", err);
	site_skip_clear();
	cr_expect_str_eq(site_of_names(cxx, N(cxx)), "app::Pool::grab(unsigned long)");
}

Test(site, short_names_and_lines)
{
	char buf[512];
	struct site st = {"app::f(int)", "src/app.cpp", 42}, none = {"app::f(int)", NULL, 0};

	profile_name_format("std::vector<app::Point, std::allocator<app::Point> >::push_back(app::"
			    "Point const&)",
			    NULL, 0, PROFILE_NAME_SHORT, buf, sizeof(buf));
	cr_expect_str_eq(buf, "std::vector<...>::push_back(app::Point const&)");
	profile_name_format("std::operator<< <std::char_traits<char> >(std::ostream&, char const*)",
			    NULL, 0, PROFILE_NAME_SHORT, buf, sizeof(buf));
	cr_expect_str_eq(buf, "std::operator<< <...>(std::ostream&, char const*)");
	profile_name_format("app::Grid<int>::operator->() const", "a.cpp", 7,
			    PROFILE_NAME_SHORT | PROFILE_NAME_LINES, buf, sizeof(buf));
	cr_expect_str_eq(buf, "app::Grid<...>::operator->() const (a.cpp:7)");
	profile_name_format("f", "a.c", 0, PROFILE_NAME_LINES, buf, sizeof(buf));
	cr_expect_str_eq(buf, "f");
	site_format(&st, 0, buf, sizeof(buf));
	cr_expect_str_eq(buf, "app::f(int) (src/app.cpp:42)");
	site_format(&none, 0, buf, sizeof(buf));
	cr_expect_str_eq(buf, "app::f(int)");
}
