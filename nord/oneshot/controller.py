"""ENAS's controller: an LSTM policy that picks a cell's operations one edge at a time, each
choice fed back as the next step's input (imports torch).

Sampling draws from a generator the caller owns (on the CPU, whatever the controller's device),
so a search's samples are a function of its seed and can be replayed after a resume.
"""
from __future__ import annotations

from typing import Callable, Tuple

import torch
from torch import nn

from nord.benchmarks.nasbench201.cells import N_EDGES, N_OPS, check_genome


class Controller(nn.Module):
    """The policy over the 6 edges' operations, as ENAS and the NAS-Bench-201 paper set it up.

    Args:
        hidden: the LSTM's width (the benchmark: 32).
        layers: stacked LSTM layers (the benchmark: 2).
        tanh_constant: logits are ``tanh_constant * tanh(logits / temperature)``, which bounds
            how sure the policy can become (the benchmark: 2.5).
        temperature: see ``tanh_constant`` (the benchmark: 5).
    """

    def __init__(self, hidden: int = 32, layers: int = 2, tanh_constant: float = 2.5,
                 temperature: float = 5.0):
        super().__init__()
        self.tanh_constant = float(tanh_constant)
        self.temperature = float(temperature)
        self.start = nn.Parameter(torch.empty(1, 1, hidden))
        self.lstm = nn.LSTM(input_size=hidden, hidden_size=hidden, num_layers=layers)
        self.embedding = nn.Embedding(N_OPS, hidden)
        self.decoder = nn.Linear(hidden, N_OPS)
        for weight in (self.start, self.embedding.weight, self.decoder.weight,
                       *(p for name, p in self.lstm.named_parameters() if "weight" in name)):
            nn.init.uniform_(weight, -0.1, 0.1)

    def _walk(self, choose: Callable[[int, torch.Tensor], int]
              ) -> Tuple[Tuple[int, ...], torch.Tensor, torch.Tensor]:
        """Run the policy over the edges; ``choose(edge, logits)`` picks each operation.
        Returns the genome, and the sums of the choices' log-probabilities and entropies."""
        inputs, state = self.start, None
        genome, log_prob, entropy = [], 0.0, 0.0
        for edge in range(N_EDGES):
            output, state = self.lstm(inputs, state)
            logits = self.tanh_constant * torch.tanh(self.decoder(output.view(1, -1))
                                                     / self.temperature)
            log_probabilities = logits.log_softmax(dim=-1).view(-1)
            op = choose(edge, log_probabilities)
            genome.append(op)
            log_prob = log_prob + log_probabilities[op]
            entropy = entropy - (log_probabilities.exp() * log_probabilities).sum()
            inputs = self.embedding(torch.tensor([[op]], device=logits.device))
        return tuple(genome), log_prob, entropy

    def sample(self, generator: torch.Generator
               ) -> Tuple[Tuple[int, ...], torch.Tensor, torch.Tensor]:
        """A cell drawn from the policy with ``generator`` (a CPU generator), with its
        log-probability and the policy's entropy along it (both differentiable)."""
        def draw(edge, log_probabilities):
            probabilities = log_probabilities.detach().exp().cpu()
            # with replacement: the draw torch.distributions.Categorical makes from the same state
            return int(torch.multinomial(probabilities, 1, True, generator=generator))
        return self._walk(draw)

    def score(self, genome) -> Tuple[torch.Tensor, torch.Tensor]:
        """The log-probability of ``genome`` under the policy, and the entropy along it."""
        genome = check_genome(genome)
        _, log_prob, entropy = self._walk(lambda edge, _: genome[edge])
        return log_prob, entropy

    def most_likely(self) -> Tuple[Tuple[int, ...], torch.Tensor]:
        """The cell of the most likely operation at every step, and each step's probabilities
        (6 edges x 5 operations) along it: the distribution a search journals."""
        rows = []

        def greedy(edge, log_probabilities):
            rows.append(log_probabilities.detach().exp())
            return int(log_probabilities.argmax())
        with torch.no_grad():
            genome, _, _ = self._walk(greedy)
        return genome, torch.stack(rows)
