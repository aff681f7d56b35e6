"""YesNoJudge: an embedded model's yes or no read as the log-odds of its first word."""

import math

import pytest

from pmc_rag.local_llm.yes_no import YesNoJudge, chatml
from pmc_rag.models import EMBEDDED_LLMS, ModelError


def test_the_prompt_is_chatml_ending_where_the_assistant_speaks():
    prompt = chatml("Answer with one word: yes or no.", "Is water wet?")
    assert prompt == ("<|im_start|>system\nAnswer with one word: yes or no.<|im_end|>\n"
                      "<|im_start|>user\nIs water wet?<|im_end|>\n<|im_start|>assistant\n")


def test_an_unknown_model_is_refused_with_the_command_that_lists_them():
    with pytest.raises(ModelError, match="pmc-rag model list"):
        YesNoJudge("no-such-model")


def test_a_model_not_installed_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setattr("pmc_rag.models.models_dir", lambda: tmp_path)
    with pytest.raises(ModelError, match="pmc-rag model install qwen2.5-coder-1.5b-instruct"):
        YesNoJudge("qwen2.5-coder-1.5b-instruct")


@pytest.mark.integration  # the real embedded model, loaded in this process
def test_the_default_model_leans_to_yes_for_a_true_statement_more_than_for_a_false_one():
    if not EMBEDDED_LLMS["qwen2.5-0.5b-instruct"].path.exists():
        pytest.skip("the default embedded model is installed by scripts/setup.sh")
    judge = YesNoJudge("qwen2.5-0.5b-instruct")
    system = "Answer with one word: yes or no."
    true, false = judge.log_odds(system, "Is 2 + 2 equal to 4?"), judge.log_odds(system, "Is 2 + 2 equal to 7?")
    assert math.isfinite(true) and math.isfinite(false)
    assert true > 0 and true > false
    judge.close()  # frees the model; the next question loads it again and reads the same
    assert judge._llm is None
    assert judge.log_odds(system, "Is 2 + 2 equal to 4?") == pytest.approx(true, abs=1e-4)
    judge.close()
