/*
 * test_file_names.c - the name rule of uploaded files (session/files.c,
 * sess_file_name_check): a name, never a path, in UTF-8 without control
 * characters, 1 to RG_FILE_NAME_MAX bytes. No browser, no network.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "session/session.h"

static void test_names_accepted(void **state)
{
    (void)state;
    static const char *good[] = {"a",
                                 "report.pdf",
                                 "My CV (final) v2.docx",
                                 ".hidden",
                                 "a..b",
                                 "...",
                                 "\xc3\xa9t\xc3\xa9.csv",
                                 "\xe2\x82\xac 10.txt",
                                 "\xf0\x9f\x93\x84.txt",
                                 "semi;colon&amp'quote\".txt",
                                 "~tilde$dollar"};
    char err[256];
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        if (sess_file_name_check(good[i], err, sizeof err) != 0)
            fail_msg("refused \"%s\": %s", good[i], err);
    char longest[RG_FILE_NAME_MAX + 1];
    memset(longest, 'x', RG_FILE_NAME_MAX);
    longest[RG_FILE_NAME_MAX] = '\0';
    assert_int_equal(sess_file_name_check(longest, err, sizeof err), 0);
}

static void test_names_refused(void **state)
{
    (void)state;
    static const char *bad[] = {
        "",        ".",        "..",       "a/b",          "/etc/passwd", "../up",
        "dir/",    "a\\b",     "..\\x",    "tab\there",    "nl\n",        "bell\a",
        "del\x7f", "\xff.txt", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x82",    "\xf4\x90\x80\x80"};
    char err[256];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = '\0';
        if (sess_file_name_check(bad[i], err, sizeof err) != RG_EBADREQ)
            fail_msg("accepted name %zu", i);
        assert_true(strlen(err) > 10); /* a sentence, not just a code */
    }
    assert_int_equal(sess_file_name_check(NULL, err, sizeof err), RG_EBADREQ);
    char over[RG_FILE_NAME_MAX + 2];
    memset(over, 'x', RG_FILE_NAME_MAX + 1);
    over[RG_FILE_NAME_MAX + 1] = '\0';
    assert_int_equal(sess_file_name_check(over, err, sizeof err), RG_EBADREQ);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_accepted),
        cmocka_unit_test(test_names_refused),
    };
    return cmocka_run_group_tests_name("file_names", tests, NULL, NULL);
}
