"""Molecules: the NCI molecules shipped with RDKit (heavy atoms and bonds) and the SMILES CSV loader."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import networkx as nx

from gie.sources.base import Scenario, SourceFileError, csv_rows, user_licence

LICENCE_NCI = (
    "NCI Open Database compounds (US Government work, public domain); file rdkit/Data/NCI/first_5K.smi "
    "shipped with RDKit (BSD-3-Clause)"
)


@dataclass(frozen=True)
class Molecule:
    mol_id: str
    smiles: str
    elements: tuple[str, ...]
    bonds: tuple[tuple[int, int], ...]

    @property
    def size(self) -> int:
        return len(self.elements)

    def graph(self) -> nx.Graph:
        """Atom ids `<mol_id>:<atom index>`, attributes `name` (element) and `element`."""
        g = nx.Graph()
        for i, el in enumerate(self.elements):
            g.add_node(f"{self.mol_id}:{i}", name=el, element=el)
        for i, j in self.bonds:
            g.add_edge(f"{self.mol_id}:{i}", f"{self.mol_id}:{j}")
        return g


@dataclass
class MoleculeSource:
    name: str
    licence: str
    molecules: tuple[Molecule, ...]
    scenario: Scenario = "molecules"
    description: str = "molecules drawn as graphs: atoms are nodes labelled by element, bonds are lines"
    # with_size by (lo, hi), with the tuple it was taken from: every molecule draw would otherwise filter
    # the whole tuple (thousands) by size
    _by_range: dict[tuple[int, int], tuple[tuple[Molecule, ...], tuple[Molecule, ...]]] = field(
        default_factory=dict, repr=False, compare=False)

    def with_size(self, lo: int, hi: int) -> list[Molecule]:
        hit = self._by_range.get((lo, hi))
        if hit is None or hit[0] is not self.molecules:
            hit = self._by_range[(lo, hi)] = (self.molecules, tuple(m for m in self.molecules if lo <= m.size <= hi))
        return list(hit[1])

    def number_of_nodes(self) -> int:
        return sum(m.size for m in self.molecules)


def _molecule(mol_id: str, smiles: str) -> Molecule | None:
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.*")
    mol = Chem.MolFromSmiles(smiles)
    if mol is None or mol.GetNumAtoms() == 0:
        return None
    elements = tuple(a.GetSymbol() for a in mol.GetAtoms())
    bonds = []
    for b in mol.GetBonds():
        i, j = b.GetBeginAtomIdx(), b.GetEndAtomIdx()
        bonds.append((min(i, j), max(i, j)))
    return Molecule(mol_id, smiles, elements, tuple(sorted(bonds)))


def _connected(m: Molecule) -> bool:
    adj: dict[int, list[int]] = {i: [] for i in range(m.size)}
    for i, j in m.bonds:
        adj[i].append(j)
        adj[j].append(i)
    seen, stack = {0}, [0]
    while stack:
        for v in adj[stack.pop()]:
            if v not in seen:
                seen.add(v)
                stack.append(v)
    return len(seen) == m.size


# Heavy-atom tokens of a SMILES string: bracket atoms, two-letter organic-subset atoms, then one-letter
# ones. Counting them first lets us skip RDKit parsing of molecules too big for any task.
_SMILES_ATOM = re.compile(r"\[[^\]]+\]|Br|Cl|[BCNOPSFI]|[bcnops]")
MAX_MOLECULE_ATOMS = 30  # hard levels: CYC/COL up to 30 atoms, GED/MCS up to 20


def smiles_atom_count(smiles: str) -> int:
    return sum(1 for t in _SMILES_ATOM.findall(smiles) if t not in ("[H]",))


@lru_cache(maxsize=1)
def nci_molecules(max_atoms: int = MAX_MOLECULE_ATOMS) -> MoleculeSource:
    """Single-fragment molecules of first_5K.smi with at most `max_atoms` heavy atoms (salts and
    mixtures, written with '.', are skipped: a molecule must be one connected graph)."""
    import rdkit

    path = Path(rdkit.__file__).parent / "Data" / "NCI" / "first_5K.smi"
    mols = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) < 2 or "." in parts[0] or smiles_atom_count(parts[0]) > max_atoms:
            continue
        m = _molecule(f"NCI{parts[1]}", parts[0])
        if m is not None and 2 <= m.size <= max_atoms and _connected(m):
            mols.append(m)
    return MoleculeSource(name="nci-molecules", licence=LICENCE_NCI, molecules=tuple(mols))


def load_smiles_csv(path: str | Path, *, licence: str = "") -> MoleculeSource:
    """CSV with a header naming a `smiles` column and optionally an `id` (or `name`) column."""
    rows = list(csv_rows(path))
    if not rows:
        raise SourceFileError(f"{path}:1: empty file, expected a header with a 'smiles' column")
    hline, header = rows[0]
    lower = [h.strip().lower() for h in header]
    if "smiles" not in lower:
        raise SourceFileError(f"{path}:{hline}: header has no 'smiles' column (found {', '.join(header)})")
    si = lower.index("smiles")
    ii = next((lower.index(k) for k in ("id", "name") if k in lower), None)
    mols = []
    for lineno, row in rows[1:]:
        if len(row) != len(header):
            raise SourceFileError(f"{path}:{lineno}: expected {len(header)} fields like the header, found {len(row)}")
        mid = row[ii].strip() if ii is not None else f"row{lineno}"
        m = _molecule(mid, row[si].strip())
        if m is None:
            raise SourceFileError(f"{path}:{lineno}: RDKit cannot parse SMILES {row[si].strip()[:40]!r}")
        if m.size >= 2 and _connected(m):
            mols.append(m)
    return MoleculeSource(name=f"smiles:{Path(path).name}", licence=licence or user_licence(path),
                          molecules=tuple(mols))
