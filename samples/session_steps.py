"""The hand-written steps of the sample sessions: pandas analyses of a few small datasets,
each step an instruction, the code and the output it prints, and for some a realistic
failure (code whose output is a traceback, sometimes the hint a human types) before the fix.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    instruction: str
    code: str
    output: str
    wrong_code: str | None = None  # a failing attempt (correct = false)
    error: str | None = None  # its traceback
    hint: str | None = None  # what the human types after seeing the error


def _traceback(line: str, code_line: str, error: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "<cell>", line {line}, in <module>\n'
        f"    {code_line}\n"
        f"{error}"
    )


DATASETS: dict[str, list[Step]] = {
    "sales.csv": [
        Step(
            "Load sales.csv and show the first rows.",
            'import pandas as pd\n\ndf = pd.read_csv("sales.csv", parse_dates=["date"])\ndf.head()',
            "        date region    product  units  unit_price\n"
            "0 2024-01-03  North     Widget     12        4.50\n"
            "1 2024-01-03  South     Gadget      3       19.99\n"
            "2 2024-01-04   East     Widget      7        4.50\n"
            "3 2024-01-05   West  Doohickey      1       89.00\n"
            "4 2024-01-05  North     Gadget      5       19.99",
        ),
        Step(
            "Compute total revenue per region, largest first.",
            'df["revenue"] = df["units"] * df["unit_price"]\n'
            'df.groupby("region")["revenue"].sum().sort_values(ascending=False)',
            "region\nNorth    18234.55\nWest     15020.10\nSouth    12877.42\nEast      9310.75\n"
            "Name: revenue, dtype: float64",
            'df["revenue"] = df["units"] * df["unit_price"]\n'
            'df.groupby("Region")["revenue"].sum().sort_values(ascending=False)',
            _traceback(
                "2",
                'df.groupby("Region")["revenue"].sum().sort_values(ascending=False)',
                "KeyError: 'Region'",
            ),
            "The column names are lowercase: use region.",
        ),
        Step(
            "Show monthly revenue for the first half of 2024.",
            'monthly = df.set_index("date").resample("MS")["revenue"].sum()\nmonthly.head(6)',
            "date\n2024-01-01    9120.40\n2024-02-01    8733.15\n2024-03-01    9954.80\n"
            "2024-04-01    9410.05\n2024-05-01    9002.62\n2024-06-01    9218.90\n"
            "Freq: MS, Name: revenue, dtype: float64",
            'monthly = df.set_index("date").resample("MS")["Revenue"].sum()\nmonthly.head(6)',
            _traceback(
                "1",
                'monthly = df.set_index("date").resample("MS")["Revenue"].sum()',
                "KeyError: 'Column not found: Revenue'",
            ),
            None,
        ),
        Step(
            "Which product sold the most units?",
            'df.groupby("product")["units"].sum().idxmax()',
            "'Widget'",
        ),
    ],
    "titanic.csv": [
        Step(
            "Load titanic.csv and tell me how big it is.",
            'import pandas as pd\n\ndf = pd.read_csv("titanic.csv")\ndf.shape',
            "(891, 12)",
        ),
        Step(
            "What is the survival rate by passenger class?",
            'df.groupby("Pclass")["Survived"].mean().round(3)',
            "Pclass\n1    0.630\n2    0.473\n3    0.242\nName: Survived, dtype: float64",
            'df.groupby("class")["Survived"].mean().round(3)',
            _traceback("1", 'df.groupby("class")["Survived"].mean().round(3)', "KeyError: 'class'"),
            "It's Pclass, with a capital P.",
        ),
        Step(
            "How many ages are missing? Fill them with the median age for each sex.",
            'print(df["Age"].isna().sum())\n'
            'df["Age"] = df["Age"].fillna(df.groupby("Sex")["Age"].transform("median"))\n'
            'df["Age"].isna().sum()',
            "177\n0",
            'print(df["Age"].isna().sum())\n'
            'df["Age"] = df["Age"].fillna(df.groupby("Sex").median())',
            "177\n"
            + _traceback(
                "2",
                'df["Age"] = df["Age"].fillna(df.groupby("Sex").median())',
                "TypeError: agg function failed [how->median,dtype->object]",
            ),
            "Only take the median of Age, not of every column.",
        ),
        Step(
            "Summarize the fares.",
            'df["Fare"].describe().round(2)',
            "count    891.00\nmean      32.20\nstd       49.69\nmin        0.00\n25%        7.91\n"
            "50%       14.45\n75%       31.00\nmax      512.33\nName: Fare, dtype: float64",
        ),
    ],
    "weather.csv": [
        Step(
            "Load weather.csv and check the column types.",
            'import pandas as pd\n\ndf = pd.read_csv("weather.csv", parse_dates=["date"])\n'
            "df.dtypes",
            "date         datetime64[ns]\ncity                 object\n"
            "temp_c              float64\nprecip_mm           float64\ndtype: object",
        ),
        Step(
            "Find the hottest day for each city.",
            'df.loc[df.groupby("city")["temp_c"].idxmax(), ["city", "date", "temp_c"]]',
            "         city       date  temp_c\n212    Berlin 2024-07-31    34.1\n"
            "1307   Madrid 2024-08-10    41.3\n943      Oslo 2024-07-02    29.8",
        ),
        Step(
            "Add a 7-day rolling mean of the temperature for each city.",
            'df = df.sort_values(["city", "date"])\n'
            'df["temp_7d"] = df.groupby("city")["temp_c"].transform(\n'
            "    lambda s: s.rolling(7).mean()\n)\n"
            'df[["city", "date", "temp_c", "temp_7d"]].tail(3)',
            "      city       date  temp_c    temp_7d\n1093  Oslo 2024-12-29    -3.2  -1.842857\n"
            "1094  Oslo 2024-12-30    -4.0  -2.214286\n1095  Oslo 2024-12-31    -2.7  -2.400000",
            'df = df.sort_values(["city", "date"])\n'
            'df["temp_7d"] = df.groupby("city")["temp_c"].rolling(7).mean()',
            _traceback(
                "2",
                'df["temp_7d"] = df.groupby("city")["temp_c"].rolling(7).mean()',
                "TypeError: incompatible index of inserted column with frame index",
            ),
            "Use transform so the result keeps the frame's index.",
        ),
        Step(
            "Count the rainy days (more than 1 mm) per city.",
            '(df["precip_mm"] > 1).groupby(df["city"]).sum()',
            "city\nBerlin    104\nMadrid     41\nOslo      139\nName: precip_mm, dtype: int64",
        ),
    ],
    "employees.csv": [
        Step(
            "Load employees.csv and show its structure.",
            'import pandas as pd\n\ndf = pd.read_csv("employees.csv")\ndf.info()',
            "<class 'pandas.core.frame.DataFrame'>\nRangeIndex: 240 entries, 0 to 239\n"
            "Data columns (total 4 columns):\n #   Column      Non-Null Count  Dtype \n"
            "---  ------      --------------  ----- \n 0   name        240 non-null    object\n"
            " 1   department  240 non-null    object\n 2   salary      240 non-null    int64 \n"
            " 3   hire_date   240 non-null    object\ndtypes: int64(1), object(3)",
        ),
        Step(
            "Give me mean and median salary and the headcount per department.",
            'df.groupby("department")["salary"].agg(["mean", "median", "count"]).round(0)',
            "                mean    median  count\ndepartment                         \n"
            "Engineering  98250.0   96000.0     92\nMarketing    71400.0   70500.0     48\n"
            "Sales        64800.0   62000.0     71\nSupport      52100.0   51500.0     29",
            'df.groupby("department").agg({"salary": ["mean", "median"], "count"})',
            '  File "<cell>", line 1\n'
            '    df.groupby("department").agg({"salary": ["mean", "median"], "count"})\n'
            "                                                                      ^\n"
            "SyntaxError: ':' expected after dictionary key",
            None,
        ),
        Step(
            "Add each person's years of service as of 2024-12-31.",
            'df["hire_date"] = pd.to_datetime(df["hire_date"])\n'
            'df["years"] = ((pd.Timestamp("2024-12-31") - df["hire_date"]).dt.days / 365.25)'
            ".round(1)\n"
            'df["years"].describe().round(1)',
            "count    240.0\nmean       5.8\nstd        4.1\nmin        0.2\n25%        2.4\n"
            "50%        4.9\n75%        8.7\nmax       19.6\nName: years, dtype: float64",
            'df["years"] = ((pd.Timestamp("2024-12-31") - df["hire_date"]).dt.days / 365.25)'
            ".round(1)",
            _traceback(
                "1",
                'df["years"] = ((pd.Timestamp("2024-12-31") - df["hire_date"]).dt.days / 365.25)',
                "TypeError: unsupported operand type(s) for -: 'Timestamp' and 'str'",
            ),
            "hire_date is still text, convert it first.",
        ),
        Step(
            "Who are the three best-paid people?",
            'df.nlargest(3, "salary")[["name", "department", "salary"]]',
            "              name   department  salary\n17     Ada Lovelace  Engineering  182000\n"
            "201   Grace Hopper  Engineering  175500\n88     Alan Turing  Engineering  171000",
        ),
    ],
    "orders.parquet": [
        Step(
            "Load orders.parquet and count the orders by status.",
            'import pandas as pd\n\ndf = pd.read_parquet("orders.parquet")\n'
            'df["status"].value_counts()',
            "status\ncompleted    8412\nshipped       911\ncancelled     503\nreturned      174\n"
            "Name: count, dtype: int64",
        ),
        Step(
            "What is the average value of a completed order?",
            'round(df.loc[df["status"] == "completed", "amount"].mean(), 2)',
            "57.38",
            'round(df.query("status == completed")["amount"].mean(), 2)',
            _traceback(
                "1",
                'round(df.query("status == completed")["amount"].mean(), 2)',
                "pandas.errors.UndefinedVariableError: name 'completed' is not defined",
            ),
            "completed is a string value, quote it.",
        ),
        Step(
            "How many customers ordered more than once?",
            '(df.groupby("customer_id").size() > 1).sum()',
            "2318",
        ),
        Step(
            "Join customers.csv and total the completed revenue by country.",
            'customers = pd.read_csv("customers.csv")\n'
            'done = df[df["status"] == "completed"].merge(customers, on="customer_id")\n'
            'done.groupby("country")["amount"].sum().round(2).sort_values(ascending=False)',
            "country\nGermany    201455.10\nFrance     118302.44\nSpain       96210.87\n"
            "Italy       66711.02\nName: amount, dtype: float64",
            'customers = pd.read_csv("customers.csv")\n'
            'done = df[df["status"] == "completed"].merge(customers, on="customer")',
            _traceback(
                "2",
                'done = df[df["status"] == "completed"].merge(customers, on="customer")',
                "KeyError: 'customer'",
            ),
            "The key is customer_id in both files.",
        ),
    ],
}
