"""Training math: sequences and masks, advantages, losses, chunked log-probs — against hand-computed numbers."""

from __future__ import annotations

import math

import pytest
import torch

from agentkit.messages import Message
from agentkit.models.protocol import TokenRecord
from agentkit.training.advantages import group_advantages, ndcg, skill1_rewards, zero_variance_groups
from agentkit.training.config import TrainConfig
from agentkit.training.credit import assign_credit
from agentkit.training.logprobs import naive_logprobs, selected_logprobs
from agentkit.training.losses import kl_k3, ppo_clip_loss, sdar_loss, token_mean
from agentkit.training.sequences import MissingTokensError, build_sequences, collate, phase_labels
from agentkit.trajectory import Trajectory

torch.set_num_threads(1)


def _turn(traj: Trajectory, prompt: list[int], completion: list[int], phase: str, context: str = "main") -> None:
    lp = [-0.1 * (i + 1) for i in range(len(completion))]
    traj.add_turn(Message.assistant("x"), phase=phase, context=context,
                  input=None if context == "main" else [Message.user("q")],
                  tokens=TokenRecord(prompt_ids=prompt, completion_ids=completion, logprobs=lp, temperature=0.5))


def multi_turn() -> Trajectory:
    """main: explore → (side query) → propose_schema → generate_sql, and a branch off turn 0."""
    t = Trajectory(task="q", task_id="t1", reward=1.0, rewards={"schema": 0.5, "answer": 1.0})
    _turn(t, [1, 2, 3], [10, 11], "explore")                                   # turn 0
    _turn(t, [50, 51], [60], "query", context="skills.query")                   # turn 1 (side context)
    _turn(t, [1, 2, 3, 10, 11, 20, 21], [12, 13], "propose_schema")             # turn 2 extends 0
    _turn(t, [1, 2, 3, 10, 11, 20, 21, 12, 13, 22], [14], "generate_sql")       # turn 3 extends 2
    _turn(t, [1, 2, 3, 10, 11, 30], [15], "explore")                            # turn 4 branches off 0
    return t


def test_sequences_follow_chains_and_mask_only_generated_tokens() -> None:
    traj = multi_turn()
    assert [turn.extends for turn in traj.turns] == [None, None, 0, 2, 0]
    seqs = build_sequences([traj])
    assert len(seqs) == 3
    main, side, branch = seqs
    # main conversation: ONE sequence, observations (20, 21, 22) and the prompt masked out
    assert main.input_ids == [1, 2, 3, 10, 11, 20, 21, 12, 13, 22, 14]
    assert main.loss_mask == [0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 1]
    assert main.turn_ids == [-1, -1, -1, 0, 0, -1, -1, 2, 2, -1, 3]
    assert phase_labels(traj, main) == [None, None, None, "explore", "explore", None, None,
                                        "propose_schema", "propose_schema", None, "generate_sql"]
    assert main.old_logprobs == pytest.approx([0, 0, 0, -0.1, -0.2, 0, 0, -0.1, -0.2, 0, -0.1])
    assert main.temperatures == [1.0, 1.0, 1.0, 0.5, 0.5, 1.0, 1.0, 0.5, 0.5, 1.0, 0.5]
    # the side context is its own sequence
    assert (side.context, side.input_ids, side.loss_mask) == ("skills.query", [50, 51, 60], [0, 0, 1])
    # a branch restarts from its full prompt; the earlier completion in it is not trained twice
    assert branch.input_ids == [1, 2, 3, 10, 11, 30, 15]
    assert branch.loss_mask == [0, 0, 0, 0, 0, 0, 1]

    batch = collate(seqs, pad_id=0)
    assert batch.input_ids.shape == (3, 11)
    # logits at column c predict the token at c + 1
    assert batch.rows.tolist() == [0, 0, 0, 0, 0, 1, 2]
    assert batch.cols.tolist() == [2, 3, 6, 7, 9, 1, 5]
    assert batch.targets.tolist() == [10, 11, 12, 13, 14, 60, 15]
    assert batch.attention_mask.sum(1).tolist() == [11, 3, 7]
    shifted = collate(seqs[1:2], prefixes=[[7, 7]])
    assert shifted.input_ids[0].tolist() == [7, 7, 50, 51, 60]
    assert shifted.cols.tolist() == [3] and shifted.targets.tolist() == [60]


def test_truncation_and_missing_tokens() -> None:
    traj = multi_turn()
    seqs = build_sequences([traj], max_len=8)
    assert seqs[0].input_ids == [1, 2, 3, 10, 11, 20, 21, 12]
    assert seqs[0].loss_mask == [0, 0, 0, 1, 1, 0, 0, 1]
    bad = Trajectory(task="q", reward=1.0)
    bad.add_turn(Message.assistant("x"), phase="act")
    with pytest.raises(MissingTokensError, match="no token ids"):
        build_sequences([bad])


def test_group_advantages_hand_computed() -> None:
    rewards = [1.0, 0.0, 0.0, 1.0, 0.5, 0.5]
    groups = ["a", "a", "a", "a", "b", "b"]
    std = math.sqrt(4 * 0.25 / 3)  # sample std of [1, 0, 0, 1]
    adv = group_advantages(rewards, groups, eps=1e-6)
    expected = [0.5 / (std + 1e-6), -0.5 / (std + 1e-6), -0.5 / (std + 1e-6), 0.5 / (std + 1e-6), 0.0, 0.0]
    assert adv.tolist() == pytest.approx(expected, abs=1e-6)
    assert adv[0].item() == pytest.approx(0.866025, abs=1e-5)
    assert group_advantages(rewards, groups, scale_by_std=False).tolist() == pytest.approx([.5, -.5, -.5, .5, 0, 0])
    assert zero_variance_groups(rewards, groups) == {"b"}
    # NaN (missing) rewards stay out of the statistics
    assert group_advantages([1.0, math.nan, 0.0], ["g"] * 3, scale_by_std=False).tolist() == [0.5, 0.0, -0.5]


def test_ndcg_and_skill1_rewards_hand_computed() -> None:
    utilities = {"a": 0.9, "b": 0.1, "c": 0.5}
    ideal = 0.9 + 0.5 / math.log2(3) + 0.1 / 2
    got = 0.1 + 0.9 / math.log2(3) + 0.5 / 2
    assert ndcg(["b", "a", "c"], utilities) == pytest.approx(got / ideal)
    assert ndcg(["a", "c", "b"], utilities) == pytest.approx(1.0)
    skills = {"retrieved": [{"id": "a", "utility": 0.9}, {"id": "b", "utility": 0.1}, {"id": "c", "utility": 0.5}],
              "ranking": ["b", "a", "c"], "used": "b", "u_hat": 0.9, "distilled": {"head": "x"}, "admitted": True}
    r = skill1_rewards(1.0, skills)
    assert r["util"] == 1.0 and r["rerank"] == pytest.approx(got / ideal) and r["distill"] == pytest.approx(0.1)
    none = skill1_rewards(0.0, {"retrieved": [], "ranking": [], "distilled": None})
    assert math.isnan(none["rerank"]) and math.isnan(none["distill"])


def test_ppo_clip_kl_sdar_hand_computed() -> None:
    logp = torch.log(torch.tensor([1.5, 0.5, 1.1]))
    old = torch.zeros(3)
    adv = torch.tensor([1.0, -1.0, 2.0])
    mask = torch.ones(3)
    # t0: min(1.5, 1.28)·1 → −1.28 (clipped); t1: min(−0.5, −0.8) → 0.8 (clipped); t2: −2.2
    loss, clipped = ppo_clip_loss(logp, old, adv, mask, clip_low=0.2, clip_high=0.28)
    assert loss.item() == pytest.approx((-1.28 + 0.8 - 2.2) / 3, abs=1e-6)
    assert clipped.item() == 2
    loss4, _ = ppo_clip_loss(logp, old, adv, mask, clip_low=0.2, clip_high=0.28, denom=4)  # batch-wide token-mean
    assert loss4.item() == pytest.approx(-2.68 / 4, abs=1e-6)
    masked, _ = ppo_clip_loss(logp, old, adv, torch.tensor([1.0, 0.0, 1.0]), clip_low=0.2, clip_high=0.28)
    assert masked.item() == pytest.approx((-1.28 - 2.2) / 2, abs=1e-6)
    k3 = kl_k3(torch.log(torch.tensor([0.5])), torch.log(torch.tensor([0.25])))
    assert k3.item() == pytest.approx(0.5 + math.log(2) - 1, abs=1e-6)
    assert kl_k3(torch.tensor([-1.0]), torch.tensor([-1.0])).item() == 0.0
    l_sdar, gate = sdar_loss(torch.tensor([-2.0, -1.0]), torch.tensor([-1.0, -3.0]), torch.ones(2), beta=5.0)
    g = [1 / (1 + math.exp(-5.0)), 1 / (1 + math.exp(10.0))]
    assert gate.tolist() == pytest.approx(g, rel=1e-5)
    assert l_sdar.item() == pytest.approx((g[0] * 1.0 + g[1] * -2.0) / 2, rel=1e-5)
    assert token_mean(torch.ones(3), torch.zeros(3)).item() == 0.0


def test_sdar_gradient_is_minus_gate_times_grad_logp() -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(20, 8), torch.nn.Linear(8, 20))
    tokens = torch.tensor([3, 7, 1, 9])
    targets = torch.tensor([7, 1, 9, 4])

    def logps() -> torch.Tensor:
        return torch.log_softmax(model(tokens), -1).gather(1, targets[:, None]).squeeze(1)

    teacher = torch.tensor([-2.0, -4.0, -3.5, -1.0])
    mask = torch.tensor([1.0, 1.0, 0.0, 1.0])
    params = list(model.parameters())
    loss, gate = sdar_loss(logps(), teacher, mask, beta=5.0)
    got = torch.autograd.grad(loss, params)
    # reference: Σ_t −g_t · ∇ log π(y_t) over masked tokens, / token count
    expected = [torch.zeros_like(p) for p in params]
    for t in range(4):
        if mask[t]:
            grads = torch.autograd.grad(logps()[t], params)
            for e, g in zip(expected, grads, strict=True):
                e -= gate[t] * g / mask.sum()
    for a, b in zip(got, expected, strict=True):
        assert torch.allclose(a, b, atol=1e-6)


@pytest.mark.parametrize("with_entropy", [False, True])
def test_chunked_logprobs_equal_naive_values_and_gradients(with_entropy: bool) -> None:
    torch.manual_seed(1)
    hidden = torch.randn(11, 16, requires_grad=True)
    weight = torch.randn(50, 16, requires_grad=True)
    targets = torch.randint(0, 50, (11,))
    temps = torch.tensor([1.0, 0.5, 0.7] * 3 + [1.0, 2.0])
    lp, ent = selected_logprobs(hidden, weight, targets, temps, chunk=3, with_entropy=with_entropy)
    lp_ref, ent_ref = naive_logprobs(hidden @ weight.T, targets, temps)
    assert torch.allclose(lp, lp_ref, atol=1e-5)
    coef = torch.linspace(-1, 1, 11)
    if with_entropy:
        assert torch.allclose(ent, ent_ref, atol=1e-5)
        out, ref = (lp * coef).sum() + 0.3 * ent.sum(), (lp_ref * coef).sum() + 0.3 * ent_ref.sum()
    else:
        out, ref = (lp * coef).sum(), (lp_ref * coef).sum()
    g = torch.autograd.grad(out, [hidden, weight])
    g_ref = torch.autograd.grad(ref, [hidden, weight])
    for a, b in zip(g, g_ref, strict=True):
        assert torch.allclose(a, b, atol=1e-5)


def test_credit_tracks_per_algorithm() -> None:
    traj_a, traj_b = multi_turn(), multi_turn()
    traj_b.reward, traj_b.rewards = 0.0, {"schema": 0.1, "answer": 0.0}
    trajs = [traj_a, traj_b]
    # Dual-Track: schema advantage only up to the end of the propose turn (turn 2), answer on all
    seqs = build_sequences(trajs)
    tracks, _ = assign_credit(trajs, seqs, TrainConfig(algo="dual-track"))
    assert [(t.name, t.weight) for t in tracks] == [("schema", 0.25), ("answer", 1.0)]
    main, side, branch = seqs[:3]
    # main generated turns [0, 0, 2, 2, 3]; side [1]; branch [4]
    assert main.tracks["schema"].mask == [1, 1, 1, 1, 0]
    assert side.tracks["schema"].mask == [1] and branch.tracks["schema"].mask == [0]
    assert main.tracks["answer"].mask == [1] * 5
    a = 0.5 / (math.sqrt(0.5) + 1e-6)  # two members: sample std of ±0.5 spread
    assert main.tracks["answer"].advantages[0] == pytest.approx(a, rel=1e-5)
    assert seqs[3].tracks["schema"].advantages[0] == pytest.approx(-a, rel=1e-5)
    # both Dual-Track advantages are clipped to ±10 (here: Dr.GRPO scaling and a big reward gap)
    traj_a.rewards = {"schema": 40.0, "answer": 3.0}
    seqs = build_sequences(trajs)
    assign_credit(trajs, seqs, TrainConfig(algo="dual-track", scale_adv_by_std=False))
    assert seqs[0].tracks["schema"].advantages[0] == 10.0 and seqs[3].tracks["schema"].advantages[0] == -10.0
    assert seqs[0].tracks["answer"].advantages[0] == pytest.approx(1.5)
    # Skill1: rerank / distill / utilization tokens carry their own advantages
    for t, ranking in ((traj_a, ["a", "b"]), (traj_b, ["b", "a"])):
        t.turns[1].phase = "rerank"
        t.turns[4].phase = "distill"
        t.extras["skills"] = {"retrieved": [{"id": "a", "utility": 1.0}, {"id": "b", "utility": 0.0}],
                              "ranking": ranking, "u_hat": 1.0, "distilled": {"x": 1}}
    seqs = build_sequences(trajs)
    tracks, _ = assign_credit(trajs, seqs, TrainConfig(algo="skill1"))
    assert [(t.name, t.weight) for t in tracks] == [("util", 1.0), ("rerank", 0.3), ("distill", 0.3)]
    main, side, branch = seqs[:3]
    assert main.tracks["util"].mask == [1] * 5 and main.tracks["rerank"].mask == [0] * 5
    assert side.tracks["rerank"].mask == [1] and side.tracks["util"].mask == [0]
    assert branch.tracks["distill"].mask == [1] and branch.tracks["util"].mask == [0]
    # traj_a ranked ideally (NDCG 1) vs traj_b (NDCG 1/log2(3)); distill r − Û: 0 vs −1
    assert side.tracks["rerank"].advantages[0] > 0 > seqs[4].tracks["rerank"].advantages[0]
    assert branch.tracks["distill"].advantages[0] == pytest.approx(a, rel=1e-5)
