"""What small models copy back from a JSON template they were asked to fill."""

from agentkit.jsontext import copies_placeholder, template_placeholders

TEMPLATE = '{"name": "short-name", "steps": ["a step of the procedure"], "ok": true, "why": "one or two sentences"}'


def test_placeholders_are_read_from_the_template_for_the_keys_asked():
    assert template_placeholders(TEMPLATE) == {"short-name", "a step of the procedure", "one or two sentences"}
    assert template_placeholders(TEMPLATE, ("steps",)) == {"a step of the procedure"}


def test_a_copy_is_a_placeholder_or_a_long_enough_piece_of_one():
    found = template_placeholders(TEMPLATE)
    assert copies_placeholder("  A step of\nthe procedure ", found)
    assert copies_placeholder("two sentences", found)  # a piece of "one or two sentences"
    assert not copies_placeholder("step", found)  # too short to be a piece
    assert not copies_placeholder("Join Track to Genre and count", found)
    assert not copies_placeholder(["a step of the procedure"], found) and not copies_placeholder("", found)
