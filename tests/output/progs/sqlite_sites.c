/*
 * A C program using SQLite through its C API (tests/output/test_sites.c):
 * libsqlite3 allocates through sqlite3Malloc and static helpers no symbol
 * names; the allocation sites must be this program's functions.  Each call
 * into SQLite that allocates is on a line marked LINE.
 *
 *   sqlite_sites READY_FILE
 *
 * It exits with the database open: what SQLite holds is live at the exit.
 */
#include <sqlite3.h>
#include <stdio.h>

#include "wait_tracer.h"

#define ROWS 40000

__attribute__((noinline)) static int load_rows(sqlite3 *db)
{
	sqlite3_stmt *st;
	char text[128];
	int rc = 0;

	rc |= sqlite3_exec(db, "CREATE TABLE t(a INTEGER, b TEXT)", 0, 0, 0);	/* LINE */
	rc |= sqlite3_exec(db, "BEGIN", 0, 0, 0);				/* LINE */
	rc |= sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?, ?)", -1, &st, 0); /* LINE */
	for (int i = 0; i < ROWS && !rc; i++) {
		snprintf(text, sizeof(text), "row %d of the table, with some text to store", i);
		sqlite3_bind_int(st, 1, i);
		sqlite3_bind_text(st, 2, text, -1, SQLITE_TRANSIENT); /* LINE */
		if (sqlite3_step(st) != SQLITE_DONE)		      /* LINE */
			rc = 1;
		sqlite3_reset(st); /* LINE */
	}
	sqlite3_finalize(st);
	return rc | sqlite3_exec(db, "COMMIT", 0, 0, 0); /* LINE */
}

__attribute__((noinline)) static long query_rows(sqlite3 *db)
{
	sqlite3_stmt *st;
	long sum = 0;

	for (int k = 0; k < 10; k++) {
		if (sqlite3_prepare_v2(
			db, "SELECT a, b FROM t WHERE a % 7 = ? ORDER BY b DESC", /* LINE */
			-1, &st, 0))
			return -1;
		sqlite3_bind_int(st, 1, k % 7);
		while (sqlite3_step(st) == SQLITE_ROW) /* LINE */
			sum += sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	return sum;
}

int main(int argc, char **argv)
{
	sqlite3 *db;
	long sum;

	if (argc != 2 || wait_for_tracer(argv[1])) {
		fprintf(stderr, "usage: sqlite_sites READY_FILE (and a tracer within 60 s)\n");
		return 2;
	}
	if (sqlite3_open(":memory:", &db) != SQLITE_OK) /* LINE */
		return 1;
	if (load_rows(db))
		return 1;
	sum = query_rows(db);
	/*
	 * The database stays open to the exit, as in a program that exits
	 * with it: its memory is live at the loader's last reading, so the
	 * timeline shows the sites however short the run was against the
	 * loader's poll.
	 */
	printf("sum %ld\n", sum);
	return sum < 0;
}
