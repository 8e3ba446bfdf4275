"""The CSV datasets the generated agent analyses: their columns (numeric, integer, code,
categorical), sizes and file names. Values are never stored, only drawn when a step needs
them, seeded by the question."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # float | int | code (small-int category) | cat
    low: float = 0.0
    high: float = 0.0
    levels: tuple[str, ...] = ()
    missing: bool = False


@dataclass(frozen=True)
class Dataset:
    file: str
    entity: str
    rows: int
    columns: tuple[Column, ...]

    def of_kind(self, *kinds: str) -> list[Column]:
        return [c for c in self.columns if c.kind in kinds]


def _num(name: str, low: float, high: float, missing: bool = False) -> Column:
    return Column(name, "float", low, high, missing=missing)


def _int(name: str, low: int, high: int) -> Column:
    return Column(name, "int", low, high)


def _code(name: str, low: int, high: int) -> Column:
    return Column(name, "code", low, high)


def _cat(name: str, *levels: str) -> Column:
    return Column(name, "cat", levels=levels)


DATASETS: tuple[Dataset, ...] = (
    Dataset(
        "titanic.csv",
        "passengers",
        891,
        (
            _code("Survived", 0, 1),
            _code("Pclass", 1, 3),
            _cat("Sex", "male", "female"),
            _num("Age", 0.42, 80.0, missing=True),
            _num("Fare", 0.0, 512.33),
            _cat("Embarked", "S", "C", "Q"),
        ),
    ),
    Dataset(
        "housing.csv",
        "districts",
        20640,
        (
            _int("housing_median_age", 1, 52),
            _num("total_bedrooms", 1.0, 6445.0, missing=True),
            _num("median_income", 0.5, 15.0),
            _num("median_house_value", 14999.0, 500001.0),
            _cat("ocean_proximity", "<1H OCEAN", "INLAND", "NEAR OCEAN", "NEAR BAY"),
        ),
    ),
    Dataset(
        "superstore_sales.csv",
        "orders",
        9994,
        (
            _cat("Region", "West", "East", "Central", "South"),
            _cat("Category", "Furniture", "Office Supplies", "Technology"),
            _num("Sales", 0.44, 22638.48),
            _num("Profit", -6599.98, 8399.98),
            _code("Quantity", 1, 14),
            _num("Discount", 0.0, 0.8),
        ),
    ),
    Dataset(
        "hr_attrition.csv",
        "employees",
        1470,
        (
            _cat("Department", "Sales", "Research & Development", "Human Resources"),
            _int("Age", 18, 60),
            _int("MonthlyIncome", 1009, 19999),
            _int("YearsAtCompany", 0, 40),
            _cat("Attrition", "Yes", "No"),
            _code("JobLevel", 1, 5),
        ),
    ),
    Dataset(
        "weather_daily.csv",
        "days",
        3650,
        (
            _cat("city", "Seattle", "Austin", "Boston", "Denver", "Miami"),
            _code("month", 1, 12),
            _num("temp_max", -10.0, 41.0),
            _num("temp_min", -22.0, 29.0),
            _num("precipitation", 0.0, 120.0, missing=True),
        ),
    ),
    Dataset(
        "penguins.csv",
        "penguins",
        344,
        (
            _cat("species", "Adelie", "Chinstrap", "Gentoo"),
            _cat("island", "Biscoe", "Dream", "Torgersen"),
            _num("bill_length_mm", 32.1, 59.6, missing=True),
            _num("flipper_length_mm", 172.0, 231.0, missing=True),
            _num("body_mass_g", 2700.0, 6300.0, missing=True),
            _cat("sex", "male", "female"),
        ),
    ),
)


DTYPES = {"float": "float64", "int": "int64", "code": "int64", "cat": "object"}
