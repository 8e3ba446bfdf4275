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

    @property
    def stem(self) -> str:
        """The dataset's name as the capture side's banks give it: the file without .csv."""
        return self.file.removesuffix(".csv")

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

# More datasets, for the sample's groups of near-copy questions: a question bank spans many
# CSVs (the capture project's, 65), and questions about other columns are other questions.
MORE_DATASETS: tuple[Dataset, ...] = (
    Dataset(
        "insurance.csv",
        "policyholders",
        1338,
        (
            _int("age", 18, 64),
            _cat("sex", "female", "male"),
            _num("bmi", 15.96, 53.13),
            _code("children", 0, 5),
            _cat("smoker", "yes", "no"),
            _cat("region", "southwest", "southeast", "northwest", "northeast"),
            _num("charges", 1121.87, 63770.43),
        ),
    ),
    Dataset(
        "wine_quality.csv",
        "wines",
        1599,
        (
            _num("fixed_acidity", 4.6, 15.9),
            _num("residual_sugar", 0.9, 15.5),
            _num("pH", 2.74, 4.01),
            _num("alcohol", 8.4, 14.9),
            _code("quality", 3, 8),
            _cat("color", "red", "white"),
        ),
    ),
    Dataset(
        "student_performance.csv",
        "students",
        1000,
        (
            _cat("gender", "female", "male"),
            _cat("race_ethnicity", "group A", "group B", "group C", "group D", "group E"),
            _cat("lunch", "standard", "free/reduced"),
            _int("math_score", 0, 100),
            _int("reading_score", 17, 100),
            _int("writing_score", 10, 100),
        ),
    ),
    Dataset(
        "heart_failure.csv",
        "patients",
        918,
        (
            _int("Age", 28, 77),
            _cat("Sex", "M", "F"),
            _cat("ChestPainType", "ASY", "NAP", "ATA", "TA"),
            _int("Cholesterol", 0, 603),
            _int("MaxHR", 60, 202),
            _num("Oldpeak", -2.6, 6.2),
            _code("HeartDisease", 0, 1),
        ),
    ),
    Dataset(
        "video_game_sales.csv",
        "games",
        16598,
        (
            _cat("Platform", "PS2", "DS", "PS3", "Wii", "X360"),
            _cat("Genre", "Action", "Sports", "Misc", "Role-Playing", "Shooter"),
            _num("User_Score", 0.0, 9.7, missing=True),
            _num("NA_Sales", 0.0, 41.49),
            _num("EU_Sales", 0.0, 29.02),
            _num("Global_Sales", 0.01, 82.74),
        ),
    ),
    Dataset(
        "avocado_prices.csv",
        "weekly records",
        18249,
        (
            _num("AveragePrice", 0.44, 3.25),
            _num("Total_Volume", 84.56, 62505646.52),
            _cat("type", "conventional", "organic"),
            _code("year", 2015, 2018),
            _cat("region", "Albany", "Atlanta", "Boston", "Chicago", "Denver", "Houston"),
        ),
    ),
    Dataset(
        "netflix_titles.csv",
        "titles",
        8807,
        (
            _cat("type", "Movie", "TV Show"),
            _cat("rating", "TV-MA", "TV-14", "PG-13", "R"),
            _int("release_year", 1925, 2021),
            _num("duration_minutes", 3.0, 312.0, missing=True),
            _cat("country", "United States", "India", "United Kingdom", "Japan"),
        ),
    ),
    Dataset(
        "bank_churn.csv",
        "customers",
        10000,
        (
            _cat("Geography", "France", "Spain", "Germany"),
            _cat("Gender", "Female", "Male"),
            _int("CreditScore", 350, 850),
            _num("Balance", 0.0, 250898.09),
            _num("EstimatedSalary", 11.58, 199992.48),
            _code("Tenure", 0, 10),
            _code("Exited", 0, 1),
        ),
    ),
)


DTYPES = {"float": "float64", "int": "int64", "code": "int64", "cat": "object"}
