"""`python -m pmc_rag.evaluation.pattern_lines`: the lines of hand-written patterns, counted from the syntax tree."""

from pmc_rag.evaluation.pattern_lines import MODULES, pattern_lines, table

SOURCE = '''import re
_WORDS = re.compile(r"^(?:one|two|"
                    r"three)$")
_OTHER = {"alpha", "beta", "gamma", "delta", "epsilon"}
_FEW = {"a", "b"}
def f(text, pattern):
    return re.search(pattern, text) or re.sub(r"\\s+", " ", text)
'''


def test_regular_expressions_and_word_lists_are_counted_by_the_lines_they_span():
    counts = pattern_lines(SOURCE)
    # the two-line compile and the one-line sub; a pattern passed in by name is not a literal; two strings are no list
    assert counts == {"lines": 7, "regex_lines": 3, "word_list_lines": 1, "expressions": 2}


def test_the_table_counts_the_four_judging_modules_and_their_total():
    text = table()
    assert all(f"`{module}`" in text for module in MODULES)
    total = text.splitlines()[-1].split("|")
    assert total[1].strip() == "all" and int(total[3]) > 0
